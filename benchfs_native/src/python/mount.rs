//! `benchfs_native.serve_mount`: the FUSE mount of a cluster, served on
//! the calling thread until it is unmounted.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::prelude::*;

use super::args::{seconds, seconds_or_zero};
use super::error::{BoundaryError, BoundaryResult};
use crate::mount::{Ended, MountOptions, serve};

/// Mount the daemons registered in ``registry_dir`` at ``mountpoint``
/// through FUSE and serve until it is unmounted (``benchfs umount``,
/// ``fusermount3 -u``) or SIGINT/SIGTERM/SIGHUP arrives (it then unmounts first).
///
/// Blocks with the GIL released. Returns ``"unmounted"``, or the name of
/// the signal that ended it (``"SIGINT"``, ``"SIGTERM"``, ``"SIGHUP"``). After serving a
/// request itself, the session thread polls for the next one for up to
/// ``session_spin_us`` microseconds (0..=1000) before sleeping.
#[pyfunction]
#[pyo3(signature = (
    registry_dir,
    mountpoint,
    *,
    read_only = false,
    allow_other = false,
    default_permissions = true,
    threads = 4,
    attr_timeout_s = 0.0,
    entry_timeout_s = 0.0,
    rpc_deadline_s = 30.0,
    connect_deadline_s = 60.0,
    session_spin_us = 0,
))]
#[allow(clippy::too_many_arguments, reason = "Python keyword arguments")]
pub(crate) fn serve_mount(
    py: Python<'_>,
    registry_dir: PathBuf,
    mountpoint: PathBuf,
    read_only: bool,
    allow_other: bool,
    default_permissions: bool,
    threads: i64,
    attr_timeout_s: f64,
    entry_timeout_s: f64,
    rpc_deadline_s: f64,
    connect_deadline_s: f64,
    session_spin_us: i64,
) -> BoundaryResult<&'static str> {
    let options = MountOptions {
        read_only,
        allow_other,
        default_permissions,
        threads: usize::try_from(threads).map_err(|_| {
            BoundaryError::argument(format!("threads must be 0 or more, got {threads}"))
        })?,
        attr_timeout: seconds_or_zero(attr_timeout_s, "attr_timeout_s")?,
        entry_timeout: seconds_or_zero(entry_timeout_s, "entry_timeout_s")?,
        rpc_deadline: seconds(rpc_deadline_s, "rpc_deadline_s")?,
        connect_deadline: seconds(connect_deadline_s, "connect_deadline_s")?,
        session_spin: Duration::from_micros(u64::try_from(session_spin_us).map_err(|_| {
            BoundaryError::argument(format!(
                "session_spin_us must be 0 or more, got {session_spin_us}"
            ))
        })?),
        handle_signals: true,
    };
    let ended = py.detach(|| serve(&registry_dir, &mountpoint, &options))?;
    Ok(match ended {
        Ended::Unmounted => "unmounted",
        Ended::Signal(libc::SIGINT) => "SIGINT",
        Ended::Signal(libc::SIGTERM) => "SIGTERM",
        Ended::Signal(libc::SIGHUP) => "SIGHUP",
        Ended::Signal(_) => "signal",
    })
}
