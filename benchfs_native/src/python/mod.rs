//! The Python bindings (feature `python`): the only module that knows
//! Python. It builds the compiled module `benchfs_native._native`, which
//! the Python package `benchfs_native` (`python/benchfs_native/`, shipped
//! with it) re-exports; the TypedDicts of the dicts returned here are
//! defined once, in that package's `_types.py`.
//!
//! * [`error`]: the boundary's error type, converted to Python exceptions
//!   in one place.
//! * [`args`]: Python arguments to engine values, ranges checked.
//! * [`buffer`]: borrowing a Python buffer's bytes (the one safety
//!   contract for Python-owned memory).
//! * [`store`], [`client`], [`daemon`], [`bench`], [`placement`],
//!   [`registry`], [`build_info`], [`posix`], [`mount`]: one class or function family
//!   each; [`phase`] and [`metadata`]: a data or metadata phase's
//!   arguments and result, shared by the client and the POSIX target;
//!   [`keywords`]: such a phase's many keyword arguments read as one
//!   struct.
//!
//! Every call that does I/O releases the GIL (`Python::detach`).

mod args;
mod bench;
mod buffer;
mod build_info;
mod client;
mod daemon;
mod error;
mod json;
mod keywords;
mod limits;
mod metadata;
mod mount;
mod phase;
mod placement;
mod posix;
mod registry;
mod store;

use pyo3::prelude::*;

/// The BenchFS engine's compiled module (re-exported by `benchfs_native`).
#[pymodule]
#[pyo3(name = "_native")]
fn native_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("LIMITS", limits::limits(m.py())?)?;
    m.add_class::<store::PyChunkStore>()?;
    m.add_class::<client::PyClient>()?;
    m.add_function(wrap_pyfunction!(build_info::build_info, m)?)?;
    m.add_function(wrap_pyfunction!(bench::bench_storage, m)?)?;
    m.add_function(wrap_pyfunction!(placement::placement_owner, m)?)?;
    m.add_function(wrap_pyfunction!(placement::metadata_owner, m)?)?;
    m.add_function(wrap_pyfunction!(placement::chunk_loads, m)?)?;
    m.add_function(wrap_pyfunction!(daemon::serve_daemon, m)?)?;
    m.add_function(wrap_pyfunction!(registry::read_registry, m)?)?;
    m.add_function(wrap_pyfunction!(registry::ensure_session_key, m)?)?;
    m.add_function(wrap_pyfunction!(registry::write_members, m)?)?;
    m.add_function(wrap_pyfunction!(posix::run_posix_phase, m)?)?;
    m.add_function(wrap_pyfunction!(posix::run_posix_metadata_phase, m)?)?;
    m.add_function(wrap_pyfunction!(posix::find_posix_level, m)?)?;
    m.add_function(wrap_pyfunction!(mount::serve_mount, m)?)?;
    Ok(())
}
