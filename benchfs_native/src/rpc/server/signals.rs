//! SIGTERM, SIGINT and SIGHUP while a daemon or mount serves: a handler that
//! only writes an eventfd (async-signal-safe), so the event loop wakes and drains instead
//! of dying mid-request. The previous handlers come back when the guard is
//! dropped (Python's own SIGINT handler, for one).
//!
//! The guard also unblocks the stop signals on its thread for its
//! lifetime. A program that blocks them before it serves (the node daemon)
//! thereby has a stop signal that came during start-up handled as soon as
//! the guard is in place, and one that comes after the guard is gone left
//! pending until it exits, never fatal.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::error::{Error, Result};
use crate::sys::{self, EventFd, SavedAction, SavedMask};

/// The eventfd the handler writes; -1 when no guard is installed.
static SIGNAL_FD: AtomicI32 = AtomicI32::new(-1);
/// The last signal received (0: none).
static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only atomics and one `write`: async-signal-safe.
    sys::preserving_errno(|| {
        LAST_SIGNAL.store(sig, Ordering::SeqCst);
        let fd = SIGNAL_FD.load(Ordering::SeqCst);
        if fd >= 0 {
            sys::notify_raw(fd);
        }
    });
}

/// Handlers for the stop signals, installed for the guard's lifetime.
#[derive(Debug)]
pub struct SignalGuard {
    fd: EventFd,
    old: Vec<SavedAction>,
    mask: Option<SavedMask>,
}

/// The signals that stop a daemon or a mount (SIGHUP: its terminal went away).
pub const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

impl SignalGuard {
    /// Installs the handler for [`STOP_SIGNALS`]. One guard per process at
    /// a time (`EBUSY` otherwise).
    pub fn install() -> Result<SignalGuard> {
        let fd = EventFd::new().map_err(|e| Error::from_io(&e, "eventfd", "signals"))?;
        if SIGNAL_FD
            .compare_exchange(-1, fd.raw(), Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Err(Error::os(
                libc::EBUSY,
                "install signal handlers",
                "another daemon in this process handles SIGTERM/SIGINT/SIGHUP",
            ));
        }
        LAST_SIGNAL.store(0, Ordering::SeqCst);
        let mut guard = SignalGuard {
            fd,
            old: Vec::new(),
            mask: None,
        };
        for sig in STOP_SIGNALS {
            match sys::set_handler(sig, on_signal) {
                Ok(saved) => guard.old.push(saved),
                // The guard's Drop restores what was already replaced.
                Err(e) => return Err(Error::from_io(&e, "sigaction", format!("signal {sig}"))),
            }
        }
        // After the handlers: a signal pending while blocked reaches them.
        let mask = sys::unblock(&STOP_SIGNALS)
            .map_err(|e| Error::from_io(&e, "pthread_sigmask", "stop signals"))?;
        guard.mask = Some(mask);
        Ok(guard)
    }

    /// The eventfd that becomes readable on a signal.
    pub fn fd(&self) -> RawFd {
        self.fd.raw()
    }

    /// The stop signal received so far, if any.
    pub fn received(&self) -> Option<libc::c_int> {
        match LAST_SIGNAL.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    /// Resets the eventfd's counter.
    pub fn drain(&self) {
        self.fd.drain();
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        // The mask first: signals blocked before the guard stay blocked
        // from here on, so none meets the restored (maybe fatal) action.
        if let Some(mask) = self.mask.take() {
            mask.restore();
        }
        for saved in self.old.drain(..).rev() {
            saved.restore();
        }
        SIGNAL_FD.store(-1, Ordering::SeqCst);
    }
}

/// The conventional name of a signal, for log lines.
pub fn signal_name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}
