//! `benchfs_native.bench_storage`: the bulk storage benchmark.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::args::{int_arg, positive_usize, trace_config};
use super::error::BoundaryResult;
use crate::bench::{self, BenchConfig, BenchResult, Pattern};

/// Run one storage pattern with the hot loop in Rust.
///
/// ``total_bytes`` is split evenly over ``files`` files named
/// ``bench.<i>`` in ``root``; reads expect the files of an earlier write.
/// ``queue_depth`` operations are kept in flight. Write patterns first
/// reserve each file's size (``fallocate``), as fio does. With ``trace_dir``
/// the run is recorded as ``trace-<node>-<pid>.bftrace``.
#[pyfunction]
#[pyo3(signature = (
    root,
    *,
    pattern,
    block_size,
    queue_depth,
    total_bytes,
    files = 1,
    direct = true,
    trace_dir = None,
    node = "local",
    node_id = 0,
))]
#[allow(clippy::too_many_arguments, reason = "Python keyword arguments")]
pub(crate) fn bench_storage<'py>(
    py: Python<'py>,
    root: PathBuf,
    pattern: &str,
    block_size: i64,
    queue_depth: i64,
    total_bytes: &Bound<'py, PyAny>,
    files: i64,
    direct: bool,
    trace_dir: Option<PathBuf>,
    node: &str,
    node_id: i64,
) -> BoundaryResult<Bound<'py, PyDict>> {
    let cfg = BenchConfig {
        root,
        pattern: Pattern::parse(pattern)?,
        block_size: positive_usize(block_size, "block_size")?,
        queue_depth: positive_usize(queue_depth, "queue_depth")?,
        total_bytes: int_arg(total_bytes, "total_bytes", 1 << 50)?,
        files: positive_usize(files, "files")?,
        direct,
        trace: trace_config(trace_dir, node, node_id)?,
    };
    let r = py.detach(|| bench::run(&cfg))?;
    result_dict(py, &r)
}

/// The `StorageBenchResult` of `r`.
fn result_dict<'py>(py: Python<'py>, r: &BenchResult) -> BoundaryResult<Bound<'py, PyDict>> {
    let lat = PyDict::new(py);
    lat.set_item("count", r.latency.count)?;
    lat.set_item("mean_ns", r.latency.mean_ns)?;
    lat.set_item("p50_ns", r.latency.p50_ns)?;
    lat.set_item("p90_ns", r.latency.p90_ns)?;
    lat.set_item("p99_ns", r.latency.p99_ns)?;
    lat.set_item("p999_ns", r.latency.p999_ns)?;
    lat.set_item("max_ns", r.latency.max_ns)?;
    let d = PyDict::new(py);
    d.set_item("pattern", r.pattern)?;
    d.set_item("block_size", r.block_size)?;
    d.set_item("queue_depth", r.queue_depth)?;
    d.set_item("files", r.files)?;
    d.set_item("bytes", r.bytes)?;
    d.set_item("ops", r.ops)?;
    d.set_item("seconds", r.seconds)?;
    d.set_item("MiBps", r.mib_per_s)?;
    d.set_item("iops", r.iops)?;
    d.set_item("latency", lat)?;
    d.set_item("io_depth_mean", r.io_depth_mean)?;
    d.set_item("direct", r.direct)?;
    d.set_item("ring_setup", r.ring_setup)?;
    Ok(d)
}
