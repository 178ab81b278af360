//! `benchfs_native.run_posix_phase` and `run_posix_metadata_phase`: one
//! rank's IOR-style or mdtest-style phase on any mounted file system (plain
//! POSIX calls), the result shaped as the client's `run_phase` and
//! `run_metadata_phase`; `find_posix_level`: one level of IO500's find.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::error::BoundaryResult;
use super::keywords::keyword_arguments;
use super::metadata::{MetadataArgs, metadata_dict};
use super::phase::{PhaseArgs, phase_dict, phase_spec};
use crate::posix::FindCriteria;

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

/// IO500's find over ``directories`` (relative to ``directory``): the
/// directories below them, the other entries scanned, and the files whose
/// name matches ``name``, whose size is ``size`` and that were modified
/// after ``newer_than_ns``.
#[pyfunction]
#[pyo3(signature = (*, directory, directories, name, size, newer_than_ns))]
pub(crate) fn find_posix_level(
    py: Python<'_>,
    directory: PathBuf,
    directories: Vec<String>,
    name: &str,
    size: u64,
    newer_than_ns: i64,
) -> BoundaryResult<(Vec<String>, u64, u64)> {
    let criteria = FindCriteria {
        name: name.to_string(),
        size,
        newer_than_ns,
    };
    let level = py.detach(|| crate::posix::find_level(&directory, &directories, &criteria))?;
    Ok((level.below, level.scanned, level.found))
}
