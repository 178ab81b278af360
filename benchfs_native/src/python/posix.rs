//! `benchfs_native.run_posix_phase` and `run_posix_metadata_phase`: one
//! rank's IOR-style or mdtest-style phase on any mounted file system (plain
//! POSIX calls), the result shaped as the client's `run_phase` and
//! `run_metadata_phase`.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::error::BoundaryResult;
use super::metadata::{MetadataArgs, metadata_dict};
use super::phase::{PhaseArgs, phase_dict, phase_spec};

/// One rank's IOR-style phase on the files under ``directory``.
#[pyfunction]
#[pyo3(signature = (
    *,
    directory,
    phase,
    file_name,
    transfer_size,
    block_size,
    segments = 1,
    rank = 0,
    ranks = 1,
    file_per_process = true,
    read_rank_shift = 0,
    verify = false,
    seed = 0,
    stonewall_s = 0.0,
    first_op = 0,
    max_ops = 0,
    fsync = false,
    max_errors = 0,
    progress_path = None,
    direct = false,
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_posix_phase<'py>(
    py: Python<'py>,
    directory: PathBuf,
    phase: &str,
    file_name: String,
    transfer_size: &Bound<'py, PyAny>,
    block_size: &Bound<'py, PyAny>,
    segments: u64,
    rank: u32,
    ranks: u32,
    file_per_process: bool,
    read_rank_shift: u32,
    verify: bool,
    seed: u64,
    stonewall_s: f64,
    first_op: u64,
    max_ops: u64,
    fsync: bool,
    max_errors: u64,
    progress_path: Option<PathBuf>,
    direct: bool,
) -> BoundaryResult<Bound<'py, PyDict>> {
    let spec = phase_spec(PhaseArgs {
        phase,
        file_name,
        transfer_size,
        block_size,
        segments,
        rank,
        ranks,
        file_per_process,
        read_rank_shift,
        verify,
        seed,
        stonewall_s,
        first_op,
        max_ops,
        fsync,
        max_errors,
        progress_path,
    })?;
    let result = py.detach(|| crate::posix::run_phase(&directory, &spec, direct))?;
    phase_dict(py, phase, &result)
}

/// One rank's mdtest-style metadata phase on the items under ``directory``.
#[pyfunction]
#[pyo3(signature = (
    *,
    directory,
    phase,
    prefix,
    items,
    kind = "file",
    rank = 0,
    ranks = 1,
    first_item = 0,
    unique_dir = true,
    write_bytes = 0,
    read_bytes = 0,
    stonewall_s = 0.0,
    verify = false,
    seed = 0,
    progress_path = None,
    tree_depth = 0,
    branch_factor = 1,
    items_per_dir = 0,
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_posix_metadata_phase<'py>(
    py: Python<'py>,
    directory: PathBuf,
    phase: String,
    prefix: String,
    items: u64,
    kind: &str,
    rank: u32,
    ranks: u32,
    first_item: u64,
    unique_dir: bool,
    write_bytes: u64,
    read_bytes: u64,
    stonewall_s: f64,
    verify: bool,
    seed: u64,
    progress_path: Option<PathBuf>,
    tree_depth: u32,
    branch_factor: u32,
    items_per_dir: u64,
) -> BoundaryResult<Bound<'py, PyDict>> {
    let spec = MetadataArgs {
        phase,
        kind,
        prefix,
        rank,
        ranks,
        items,
        first_item,
        unique_dir,
        write_bytes,
        read_bytes,
        stonewall_s,
        verify,
        seed,
        progress_path,
        tree_depth,
        branch_factor,
        items_per_dir,
    }
    .spec()?;
    let result = py.detach(|| crate::posix::run_metadata_phase(&directory, &spec))?;
    metadata_dict(py, &spec, &result)
}
