//! `benchfs_native.build_info`: where the extension came from.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::error::BoundaryResult;

/// Version, cargo profile and git revision the extension was built from, the
/// source directory it was built in, and the UCX library it runs with (UCX's
/// figures move between releases).
#[pyfunction]
pub(crate) fn build_info(py: Python<'_>) -> BoundaryResult<Bound<'_, PyDict>> {
    let b = crate::build_info::build_info();
    let d = PyDict::new(py);
    d.set_item("version", b.version)?;
    d.set_item("profile", b.profile)?;
    d.set_item("git_revision", b.git_revision)?;
    d.set_item("rustc", b.rustc)?;
    d.set_item("source_dir", b.source_dir)?;
    let (major, minor, release) = benchfs_ucx::Context::library_version();
    d.set_item("ucx", format!("{major}.{minor}.{release}"))?;
    Ok(d)
}
