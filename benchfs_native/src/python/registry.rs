//! `read_registry`: the membership registry as the engine itself reads it
//! ([`membership::read_all`]), so Python never parses registry records on
//! its own; `ensure_session_key`: the job's secret beside it;
//! `write_members`: the members file clients read instead of the records.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use super::error::BoundaryResult;
use crate::membership::{self, Expected, Record};
use crate::rpc::members;
use crate::rpc::session_key;

/// The job's session key for ``registry_dir``: ``$BENCHFS_SESSION_KEY``
/// if set, else ``registry_dir/session.key``, created (0600, a new random
/// key; the directory 0700 if new) when absent. Returns where the key is
/// (the variable's name or the file's path), never the key.
///
/// A key file that is not a regular file, belongs to another user or is
/// readable by others raises ``ValueError`` naming it.
#[pyfunction]
pub(crate) fn ensure_session_key(py: Python<'_>, registry_dir: PathBuf) -> BoundaryResult<String> {
    let key = py.detach(|| session_key::ensure(&registry_dir))?;
    Ok(key.source().to_owned())
}

/// Writes ``registry_dir/members.json``: the records of the daemons named
/// in ``node_names`` (all registered, ids ``0..N``), signed with the job's
/// session key, atomically; clients then read this one file instead of N
/// records. Returns its path.
///
/// A missing daemon, or ids that are not ``0..N``, raise ``ValueError``
/// naming the registry; no session key raises ``FileNotFoundError``.
#[pyfunction]
pub(crate) fn write_members(
    py: Python<'_>,
    registry_dir: PathBuf,
    node_names: Vec<String>,
) -> BoundaryResult<String> {
    let path = py.detach(|| {
        let key = session_key::load(&registry_dir)?.ok_or_else(|| {
            crate::Error::os(
                libc::ENOENT,
                "write the members file: no session key",
                session_key::key_path(&registry_dir).display().to_string(),
            )
        })?;
        members::publish(&registry_dir, &Expected::Names(node_names), &key).map(|(p, _)| p)
    })?;
    Ok(path.display().to_string())
}

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
