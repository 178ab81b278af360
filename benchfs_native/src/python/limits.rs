//! The engine's bounds, exported as `benchfs_native.LIMITS` so that the
//! Python side refuses a bad value with the same bound the engine would,
//! before anything starts (`benchfs/config/model.py` takes them from here).

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::membership::MAX_NODE_NAME;
use crate::mount::options::{MAX_SESSION_SPIN, MAX_THREADS};
use crate::rpc::client::MAX_IO;
use crate::rpc::server::{MAX_BULK_SPIN, MAX_CONCURRENCY};
use crate::rpc::wire::{MAX_NAME, MAX_PATH};
use crate::storage::store::{MAX_CHUNK, MAX_POOL_BYTES, MAX_READ};

/// Every bound by name, in bytes, counts or microseconds (as the name says).
pub(crate) fn limits(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let limits = PyDict::new(py);
    let entries: [(&str, u128); 10] = [
        ("max_chunk", u128::from(MAX_CHUNK)),
        ("max_pool_bytes", MAX_POOL_BYTES as u128),
        ("max_io", MAX_IO as u128),
        ("max_read", MAX_READ as u128),
        ("max_concurrency", MAX_CONCURRENCY as u128),
        ("max_bulk_spin_us", MAX_BULK_SPIN.as_micros()),
        ("max_mount_threads", MAX_THREADS as u128),
        ("max_mount_session_spin_us", MAX_SESSION_SPIN.as_micros()),
        ("max_name", MAX_NAME as u128),
        ("max_path", MAX_PATH as u128),
    ];
    for (name, value) in entries {
        limits.set_item(name, value)?;
    }
    limits.set_item("max_node_name", MAX_NODE_NAME)?;
    Ok(limits)
}
