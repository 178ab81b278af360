//! `benchfs_native.run_posix_phase` and `run_posix_metadata_phase`: one
//! rank's IOR-style or mdtest-style phase on any mounted file system (plain
//! POSIX calls), the result shaped as the client's `run_phase` and
//! `run_metadata_phase`.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::error::BoundaryResult;
use super::keywords::keyword_arguments;
use super::metadata::{MetadataArgs, metadata_dict};
use super::phase::{PhaseArgs, phase_dict, phase_spec};

/// One rank's IOR-style phase on the files under ``directory``.
#[pyfunction]
#[pyo3(signature = (*, directory, direct = false, **arguments))]
pub(crate) fn run_posix_phase<'py>(
    py: Python<'py>,
    directory: PathBuf,
    direct: bool,
    arguments: Option<&Bound<'py, PyDict>>,
) -> BoundaryResult<Bound<'py, PyDict>> {
    let args: PhaseArgs<'py> = keyword_arguments(py, "run_posix_phase", arguments)?;
    let spec = phase_spec(args)?;
    let result = py.detach(|| crate::posix::run_phase(&directory, &spec, direct))?;
    phase_dict(py, &spec, &result)
}

/// One rank's mdtest-style metadata phase on the items under ``directory``.
#[pyfunction]
#[pyo3(signature = (*, directory, **arguments))]
pub(crate) fn run_posix_metadata_phase<'py>(
    py: Python<'py>,
    directory: PathBuf,
    arguments: Option<&Bound<'py, PyDict>>,
) -> BoundaryResult<Bound<'py, PyDict>> {
    let args: MetadataArgs = keyword_arguments(py, "run_posix_metadata_phase", arguments)?;
    let spec = args.spec()?;
    let result = py.detach(|| crate::posix::run_metadata_phase(&directory, &spec))?;
    metadata_dict(py, &spec, &result)
}
