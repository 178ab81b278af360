//! One rank's mdtest-style phase across the boundary: its arguments to a
//! [`MetadataSpec`] and its [`MetadataResult`] to the dict Python sees,
//! shared by the client's metadata phase and the POSIX target's.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::args::seconds_or_zero;
use super::error::{BoundaryError, BoundaryResult};
use super::keywords::keyword_struct;
use super::phase::set_latency;
use crate::rpc::client::{ItemKind, MetadataOp, MetadataResult, MetadataSpec};

keyword_struct! {
    /// One metadata phase's arguments as Python gave them (the keyword
    /// arguments of `Client.run_metadata_phase` and
    /// `run_posix_metadata_phase`).
    pub(super) struct MetadataArgs {
        phase: String,
        prefix: String,
        items: u64,
        #[pyo3(default = "file".to_owned())]
        kind: String,
        #[pyo3(default)]
        rank: u32,
        #[pyo3(default = 1)]
        ranks: u32,
        #[pyo3(default)]
        first_item: u64,
        #[pyo3(default = true)]
        unique_dir: bool,
        #[pyo3(default)]
        write_bytes: u64,
        #[pyo3(default)]
        read_bytes: u64,
        #[pyo3(default)]
        stonewall_s: f64,
        #[pyo3(default)]
        verify: bool,
        #[pyo3(default)]
        seed: u64,
        #[pyo3(default)]
        progress_path: Option<PathBuf>,
        #[pyo3(default)]
        tree_depth: u32,
        #[pyo3(default = 1)]
        branch_factor: u32,
        #[pyo3(default)]
        items_per_dir: u64,
    }
}

impl MetadataArgs {
    /// The spec, or an error naming the argument.
    pub(super) fn spec(self) -> BoundaryResult<MetadataSpec> {
        let op: MetadataOp = self.phase.parse()?;
        let kind: ItemKind = self.kind.parse()?;
        let stonewall = seconds_or_zero(self.stonewall_s, "stonewall_s")?;
        if !stonewall.is_zero() && op != MetadataOp::Create {
            return Err(BoundaryError::argument(format!(
                "stonewall_s applies to the create phase only (mdtest's), not to {:?}",
                self.phase
            )));
        }
        Ok(MetadataSpec {
            op,
            kind,
            prefix: self.prefix,
            rank: self.rank,
            ranks: self.ranks,
            items: self.items,
            first_item: self.first_item,
            unique_dir: self.unique_dir,
            write_bytes: self.write_bytes,
            read_bytes: self.read_bytes,
            stonewall: (!stonewall.is_zero()).then_some(stonewall),
            verify: self.verify,
            seed: self.seed,
            progress_path: self.progress_path,
            tree_depth: self.tree_depth,
            branch_factor: self.branch_factor,
            items_per_dir: self.items_per_dir,
        })
    }
}

/// The `MetadataPhaseResult` dict.
pub(super) fn metadata_dict<'py>(
    py: Python<'py>,
    spec: &MetadataSpec,
    r: &MetadataResult,
) -> BoundaryResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("phase", spec.op.name())?;
    d.set_item("kind", spec.kind.name())?;
    d.set_item("dir", &r.dir)?;
    d.set_item("ops", r.ops)?;
    d.set_item("items_reached", r.items_reached)?;
    d.set_item("bytes", r.bytes)?;
    d.set_item("start_unix_ns", r.start_unix_ns)?;
    d.set_item("end_unix_ns", r.end_unix_ns)?;
    d.set_item("elapsed_s", r.elapsed_s)?;
    set_latency(py, &d, &r.latency_ns, &r.latency)?;
    d.set_item("stonewalled", r.stonewalled)?;
    d.set_item("verify_errors", r.verify_errors)?;
    d.set_item("first_bad_item", r.first_bad_item)?;
    d.set_item("rpcs", r.rpcs)?;
    d.set_item("retries", r.retries)?;
    Ok(d)
}
