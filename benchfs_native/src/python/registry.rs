//! `read_registry`: the membership registry as the engine itself reads it
//! ([`membership::read_all`]), so Python never parses registry records on
//! its own.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use super::error::BoundaryResult;
use crate::membership::{self, Record};

/// Every daemon record in ``registry_dir``, sorted by node id.
///
/// Temp files and other files are skipped; a record that does not parse,
/// or two records claiming one node id, raise ``ValueError`` naming the
/// files; a missing directory raises ``FileNotFoundError``.
#[pyfunction]
pub(crate) fn read_registry(
    py: Python<'_>,
    registry_dir: PathBuf,
) -> BoundaryResult<Vec<Bound<'_, PyDict>>> {
    let records = py.detach(|| membership::read_all(&registry_dir))?;
    Ok(records
        .iter()
        .map(|r| record_dict(py, r))
        .collect::<PyResult<_>>()?)
}

fn record_dict<'py>(py: Python<'py>, r: &Record) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("node_name", &r.node_name)?;
    d.set_item("node_id", r.node_id)?;
    d.set_item("daemon_index", r.daemon_index)?;
    d.set_item("pid", r.pid)?;
    d.set_item("host", &r.host)?;
    d.set_item("worker_address", PyBytes::new(py, &r.worker_address))?;
    d.set_item("data_dir", &r.data_dir)?;
    d.set_item("start_time_unix_ns", r.start_time_unix_ns)?;
    d.set_item("protocol_version", r.protocol_version)?;
    Ok(d)
}
