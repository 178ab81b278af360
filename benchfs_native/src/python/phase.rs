//! One rank's IOR-style phase across the boundary: its arguments to a
//! [`PhaseSpec`] and its [`PhaseResult`] to the dict Python sees, shared
//! by the client's phase and the POSIX target's.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use super::args::{int_arg, seconds_or_zero};
use super::error::{BoundaryError, BoundaryResult};
use super::keywords::keyword_struct;
use crate::latency::LatencySummary;
use crate::rpc::client::{PhaseResult, PhaseSpec};

keyword_struct! {
    /// A phase's arguments as Python gave them (the keyword arguments of
    /// `Client.run_phase` and `run_posix_phase`); the sizes stay Python
    /// ints until [`phase_spec`] checks their range.
    pub(crate) struct PhaseArgs<'py> {
        phase: String,
        file_name: String,
        transfer_size: Bound<'py, PyAny>,
        block_size: Bound<'py, PyAny>,
        #[pyo3(default = 1)]
        segments: u64,
        #[pyo3(default)]
        rank: u32,
        #[pyo3(default = 1)]
        ranks: u32,
        #[pyo3(default = true)]
        file_per_process: bool,
        #[pyo3(default)]
        read_rank_shift: u32,
        #[pyo3(default)]
        verify: bool,
        #[pyo3(default)]
        seed: u64,
        #[pyo3(default)]
        stonewall_s: f64,
        #[pyo3(default)]
        first_op: u64,
        #[pyo3(default)]
        max_ops: u64,
        #[pyo3(default)]
        fsync: bool,
        #[pyo3(default)]
        max_errors: u64,
        #[pyo3(default)]
        progress_path: Option<PathBuf>,
    }
}

/// The engine's description of the phase, every argument checked.
pub(crate) fn phase_spec(a: PhaseArgs<'_>) -> BoundaryResult<PhaseSpec> {
    let write = match a.phase.as_str() {
        "write" => true,
        "read" => false,
        other => {
            return Err(BoundaryError::argument(format!(
                "phase must be 'write' or 'read', got {other:?}"
            )));
        }
    };
    let stonewall = seconds_or_zero(a.stonewall_s, "stonewall_s")?;
    Ok(PhaseSpec {
        write,
        file_name: a.file_name,
        rank: a.rank,
        ranks: a.ranks,
        transfer_size: int_arg(&a.transfer_size, "transfer_size", 1 << 30)?,
        block_size: int_arg(&a.block_size, "block_size", 1 << 50)?,
        segments: a.segments,
        file_per_process: a.file_per_process,
        read_rank_shift: a.read_rank_shift,
        verify: a.verify,
        seed: a.seed,
        stonewall: (!stonewall.is_zero()).then_some(stonewall),
        first_op: a.first_op,
        max_ops: a.max_ops,
        fsync: a.fsync,
        max_errors: a.max_errors,
        progress_path: a.progress_path,
    })
}

/// The `PhaseResult` dict.
pub(crate) fn phase_dict<'py>(
    py: Python<'py>,
    spec: &PhaseSpec,
    r: &PhaseResult,
) -> BoundaryResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("phase", if spec.write { "write" } else { "read" })?;
    d.set_item("path", &r.path)?;
    d.set_item("bytes", r.bytes)?;
    d.set_item("ops", r.ops)?;
    d.set_item("ops_reached", r.ops_reached)?;
    d.set_item("total_ops", r.total_ops)?;
    d.set_item("start_unix_ns", r.start_unix_ns)?;
    d.set_item("end_unix_ns", r.end_unix_ns)?;
    d.set_item("elapsed_s", r.elapsed_s)?;
    d.set_item("open_s", r.open_s)?;
    d.set_item("io_s", r.io_s)?;
    d.set_item("close_s", r.close_s)?;
    set_latency(py, &d, &r.latency_ns, &r.latency)?;
    d.set_item("errors", r.errors)?;
    d.set_item("verify_errors", r.verify_errors)?;
    d.set_item("first_bad_offset", r.first_bad_offset)?;
    d.set_item("stonewalled", r.stonewalled)?;
    d.set_item("rpcs", r.rpcs)?;
    d.set_item("retries", r.retries)?;
    Ok(d)
}

/// Every op's latency (``latency_ns``: little-endian u64s, for
/// ``numpy.frombuffer``) and its summary, as both phase dicts carry them.
pub(crate) fn set_latency(
    py: Python<'_>,
    d: &Bound<'_, PyDict>,
    samples: &[u64],
    summary: &LatencySummary,
) -> BoundaryResult<()> {
    let mut bytes = Vec::with_capacity(samples.len() * 8);
    for v in samples {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    d.set_item("latency_ns", PyBytes::new(py, &bytes))?;
    d.set_item("min_ns", summary.min_ns)?;
    d.set_item("mean_ns", summary.mean_ns)?;
    d.set_item("p50_ns", summary.p50_ns)?;
    d.set_item("p90_ns", summary.p90_ns)?;
    d.set_item("p99_ns", summary.p99_ns)?;
    d.set_item("p999_ns", summary.p999_ns)?;
    d.set_item("max_ns", summary.max_ns)?;
    Ok(())
}
