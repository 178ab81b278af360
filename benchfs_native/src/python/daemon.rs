//! `benchfs_native.serve_daemon`: one daemon, run to its end on the
//! calling thread.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::prelude::*;

use super::args::{positive, positive_usize, seconds, seconds_or_zero, u32_arg};
use super::error::{BoundaryError, BoundaryResult};
use super::json::json_loads;
use crate::daemon::{DaemonConfig, serve};

/// Run one daemon until SIGTERM/SIGINT/SIGHUP or a shutdown request.
///
/// Opens the chunk store in ``data_dir`` (created if missing), creates
/// the UCX worker, registers in ``registry_dir``, serves, then drains
/// (at most ``shutdown_deadline_s``), fsyncs when ``durability`` asks,
/// unregisters and closes the store. Blocks with the GIL released; SIGTERM,
/// SIGINT and SIGHUP are handled natively meanwhile (the previous handlers are
/// restored on return). A channel that has carried no request for
/// ``channel_stall_s`` while one of its transfers has been unfinished as
/// long is freed (its client is gone). After a request that moved bulk
/// data, the idle event loop spins up to ``bulk_spin_us`` while no thread
/// on the machine waits for a CPU (0: it sleeps after its short spin).
/// Returns the daemon's summary.
#[pyfunction]
#[pyo3(signature = (
    *,
    node_name,
    node_id,
    daemon_index,
    data_dir,
    registry_dir,
    chunk_size,
    buffer_pool_size,
    durability,
    transport,
    max_concurrency,
    trace_dir,
    shutdown_deadline_s,
    buffered = false,
    channel_stall_s = 60.0,
    bulk_spin_us = 0,
))]
#[allow(clippy::too_many_arguments, reason = "Python keyword arguments")]
pub(crate) fn serve_daemon<'py>(
    py: Python<'py>,
    node_name: String,
    node_id: i64,
    daemon_index: i64,
    data_dir: PathBuf,
    registry_dir: PathBuf,
    chunk_size: i64,
    buffer_pool_size: i64,
    durability: &str,
    transport: &str,
    max_concurrency: i64,
    trace_dir: Option<PathBuf>,
    shutdown_deadline_s: f64,
    buffered: bool,
    channel_stall_s: f64,
    bulk_spin_us: i64,
) -> BoundaryResult<Bound<'py, PyAny>> {
    let deadline = seconds_or_zero(shutdown_deadline_s, "shutdown_deadline_s")?;
    let stall = seconds(channel_stall_s, "channel_stall_s")?;
    let mut cfg = DaemonConfig::new(
        node_name,
        u32_arg(node_id, "node_id")?,
        data_dir,
        registry_dir,
    );
    cfg.daemon_index = u32_arg(daemon_index, "daemon_index")?;
    cfg.chunk_size = positive(chunk_size, "chunk_size")?;
    cfg.buffer_pool_size = positive(buffer_pool_size, "buffer_pool_size")?;
    cfg.durability = durability.parse()?;
    cfg.transport = transport.parse()?;
    cfg.max_concurrency = positive_usize(max_concurrency, "max_concurrency")?;
    cfg.trace_dir = trace_dir.filter(|d| !d.as_os_str().is_empty());
    cfg.shutdown_deadline = deadline;
    cfg.handle_signals = true;
    cfg.buffered = buffered;
    cfg.channel_stall_reclaim = stall;
    cfg.bulk_spin = bulk_spin(bulk_spin_us)?;
    // The UCX worker is created inside `serve`, on this thread, with the
    // GIL released: nothing `!Send` crosses the closure.
    let summary = py.detach(|| serve(&cfg))?;
    let json = serde_json::to_string(&summary)
        .map_err(|e| BoundaryError::Internal(format!("daemon summary: {e}")))?;
    json_loads(py, &json)
}

/// ``bulk_spin_us`` in ``0..=`` the engine's bound, else `ValueError` naming it.
fn bulk_spin(us: i64) -> BoundaryResult<Duration> {
    let max = crate::rpc::server::MAX_BULK_SPIN.as_micros();
    u64::try_from(us)
        .ok()
        .filter(|&v| u128::from(v) <= max)
        .map(Duration::from_micros)
        .ok_or_else(|| {
            BoundaryError::argument(format!(
                "bulk_spin_us must be between 0 and {max}, got {us}"
            ))
        })
}
