//! The UCP worker: one per thread, progressed by its owner, able to sleep
//! on an event fd when idle.

use std::fmt;
use std::os::fd::RawFd;
use std::ptr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::address::WorkerAddress;
use crate::am::{self, AmMessage};
use crate::context::Context;
use crate::endpoint::{Endpoint, EndpointOptions};
use crate::error::{Result, check};
use crate::print::print_to_string;
use crate::request::Request;
use crate::shared::WorkerShared;
use crate::signals::{Drained, ForeignSignals};
use crate::sys;

/// A UCP worker (`ucp_worker_h`) in single-thread mode.
///
/// Owned by the thread that created it (`!Send`, `!Sync`): that thread
/// calls [`Worker::progress`] (or a wait), which runs the AM handlers and
/// completion callbacks. Endpoints and requests keep the worker's state
/// alive, so dropping the `Worker` first is fine.
pub struct Worker {
    pub(crate) shared: Rc<WorkerShared>,
}

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("handle", &self.shared.handle)
            .finish()
    }
}

impl Context {
    /// Create a worker owned by the calling thread.
    pub fn create_worker(&self) -> Result<Worker> {
        Ok(Worker {
            shared: WorkerShared::create(self)?,
        })
    }
}

impl Worker {
    /// One round of `ucp_worker_progress`; returns the number of events
    /// processed (0: nothing happened). Runs AM handlers and completion
    /// callbacks. A panic in a handler is resumed here.
    ///
    /// # Panics
    /// When called from inside a handler (UCX forbids re-entry).
    pub fn progress(&self) -> u32 {
        self.shared.progress()
    }

    /// This worker's address, to publish for peers.
    pub fn address(&self) -> Result<WorkerAddress> {
        let mut addr: *mut sys::ucp_address_t = ptr::null_mut();
        let mut len: usize = 0;
        // Safety: live worker, valid out-pointers.
        check("ucp_worker_get_address", unsafe {
            sys::ucp_worker_get_address(self.shared.handle, &mut addr, &mut len)
        })?;
        // Safety: UCX returned `len` readable bytes at `addr`.
        let bytes = unsafe { std::slice::from_raw_parts(addr as *const u8, len) }.to_vec();
        // Safety: releases the buffer from `ucp_worker_get_address` once.
        unsafe { sys::ucp_worker_release_address(self.shared.handle, addr) };
        Ok(WorkerAddress::from_bytes(bytes))
    }

    /// The worker's event fd (`ucp_worker_get_efd`), for an epoll set.
    /// Before sleeping on it, call [`Worker::arm`]; it stays owned by UCX
    /// (do not close it).
    pub fn event_fd(&self) -> Result<RawFd> {
        self.shared.event_fd()
    }

    /// After a wake-up from the event fd: reads the shared-memory
    /// transports' wake-up sockets (see [`ForeignSignals`]). `foreign > 0`
    /// with `own == 0`: only datagrams from outside the job woke the
    /// worker, which then may arm and sleep again without spinning.
    pub fn woke(&self) -> Drained {
        self.shared.woke()
    }

    /// What the wake-up sockets received from other users so far.
    pub fn foreign_signals(&self) -> ForeignSignals {
        self.shared.signal_sockets().seen()
    }

    /// The wake-up sockets guarded (empty without shared memory).
    pub fn signal_fds(&self) -> Vec<RawFd> {
        self.shared.signal_sockets().fds().to_vec()
    }

    /// `ucp_worker_arm`: `Ok(true)` when armed (safe to sleep on the event
    /// fd), `Ok(false)` when events are pending (progress again first).
    pub fn arm(&self) -> Result<bool> {
        self.shared.arm()
    }

    /// Progress until `done()` returns true or `deadline` passes. The
    /// timeout error names `what`. Idle waits sleep on the event fd after
    /// [`Worker::set_spin_iterations`] empty progress calls.
    pub fn wait_until(
        &self,
        deadline: Instant,
        what: &str,
        done: impl FnMut() -> bool,
    ) -> Result<()> {
        self.shared.wait_until(deadline, what, done)
    }

    /// Progress until `request` completes or `deadline` passes.
    pub fn wait_for<B>(&self, request: &Request<B>, deadline: Instant) -> Result<()> {
        self.shared
            .wait_until(deadline, request.what(), || request.is_done())
    }

    /// Sleep until there is work or `timeout` passes: progress once, arm,
    /// and poll the event fd. Returns the number of events progressed.
    pub fn progress_or_sleep(&self, timeout: Duration) -> Result<u32> {
        let n = self.progress();
        if n != 0 {
            return Ok(n);
        }
        if self.arm()? {
            self.shared.sleep(timeout)?;
        }
        Ok(self.progress())
    }

    /// How many requests have completed through their UCX callback on
    /// this worker (wrapping). A request that completes later than its
    /// start always counts here, so a wait on many requests can watch this
    /// number instead of asking each of them on every spin; one that
    /// completed at once ([`Request::is_done`] right after the send or
    /// receive returned) never does.
    pub fn completions(&self) -> u64 {
        self.shared.completions.get()
    }

    /// Empty progress calls a wait spins through before it sleeps
    /// (default [`DEFAULT_SPIN_ITERATIONS`](crate::DEFAULT_SPIN_ITERATIONS)); `u32::MAX` never sleeps.
    pub fn set_spin_iterations(&self, n: u32) {
        self.shared.set_spin(n);
    }

    /// The empty progress calls a wait spins through before it sleeps.
    pub fn spin_iterations(&self) -> u32 {
        self.shared.spin()
    }

    /// Makes a wait yield the core (`sched_yield`) every `n` empty progress
    /// calls while it spins (0, the default: never).
    pub fn set_spin_yield(&self, n: u32) {
        self.shared.set_yield_every(n);
    }

    /// Empty progress calls between two yields of a wait (0: never).
    pub fn spin_yield(&self) -> u32 {
        self.shared.yield_every()
    }

    /// Connect to a peer worker.
    pub fn connect(&self, peer: &WorkerAddress, opts: EndpointOptions) -> Result<Endpoint> {
        Endpoint::connect(&self.shared, peer, opts)
    }

    /// Print UCX's view of the worker (transports, resources) to a string.
    pub fn info(&self) -> String {
        print_to_string(|f| {
            // Safety: live worker; `f` is a valid FILE stream.
            unsafe { sys::ucp_worker_print_info(self.shared.handle, f.cast()) }
        })
    }
}

impl Worker {
    /// Register (or replace) the handler for active messages of `id`. It
    /// runs inside [`Worker::progress`], gets each message by value, and
    /// may keep it (e.g. queue it) or drop it.
    pub fn set_am_handler(&self, id: u16, handler: impl FnMut(AmMessage) + 'static) -> Result<()> {
        am::set_handler(&self.shared, id, Box::new(handler))
    }

    /// Unregister the handler of `id`.
    pub fn clear_am_handler(&self, id: u16) -> Result<()> {
        am::clear_handler(&self.shared, id)
    }
}
