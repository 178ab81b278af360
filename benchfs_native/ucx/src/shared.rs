//! The state of one worker that its endpoints, requests, messages and
//! handlers share (each holds an `Rc` or a `Weak` of it): the UCX handle,
//! the registered AM handlers, what the AM callback in flight did, and the
//! progress / arm / sleep loop. [`crate::Worker`] is its owner's face.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::c_void;
use std::os::fd::RawFd;
use std::ptr;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::context::{Context, ContextInner};
use crate::error::{Error, Result, check};
use crate::signals::{Drained, SignalSockets};
use crate::sys;

/// Idle progress calls before a wait arms the worker and sleeps on its
/// event fd (when the context has wake-up enabled).
pub const DEFAULT_SPIN_ITERATIONS: u32 = 20_000;

/// What the AM callback in flight did with its message (see `am.rs`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum CbOutcome {
    /// Still held by the application: return `UCS_INPROGRESS`.
    Kept,
    /// Dropped inside the callback: return `UCS_OK` (or cancel a
    /// rendezvous).
    Released,
    /// Rendezvous receive started inside the callback: return `UCS_OK`.
    Consumed,
}

pub(crate) struct WorkerShared {
    pub(crate) handle: sys::ucp_worker_h,
    _ctx: Arc<ContextInner>,
    wakeup: bool,
    efd: Cell<Option<RawFd>>,
    /// The shared-memory transports' wake-up sockets (`signals`).
    signals: SignalSockets,
    spin: Cell<u32>,
    /// Yield the core every so many empty progress calls of a wait (0:
    /// never).
    yield_every: Cell<u32>,
    in_progress: Cell<bool>,
    /// The registered AM handlers (`am::HandlerSlot`), owned here so that
    /// they outlive every callback UCX may still make into them.
    pub(crate) handlers: RefCell<HashMap<u16, Box<dyn RegisteredHandler>>>,
    /// Sequence number of the AM callback currently running (0: none).
    pub(crate) cb_active: Cell<u64>,
    /// Last sequence number given to an AM callback.
    pub(crate) cb_seq: Cell<u64>,
    pub(crate) cb_outcome: Cell<CbOutcome>,
    /// Requests completed through their UCX callback so far (wrapping).
    pub(crate) completions: Cell<u64>,
    /// A panic caught inside a UCX callback, resumed after progress.
    pub(crate) panic: Cell<Option<Box<dyn Any + Send>>>,
    pub(crate) self_weak: Weak<WorkerShared>,
    /// Endpoint close requests that did not finish before their deadline;
    /// freed before the worker is destroyed.
    pub(crate) stale_close: RefCell<Vec<*mut c_void>>,
}

impl Drop for WorkerShared {
    fn drop(&mut self) {
        for req in self.stale_close.get_mut().drain(..) {
            // Safety: a close request still owned by us; freeing an
            // unfinished request is allowed (no callback was set).
            unsafe { sys::ucp_request_free(req) };
        }
        // Safety: every endpoint and request holds an `Rc<WorkerShared>`,
        // so none is alive; handler slots (still registered) are dropped
        // only after this call returns, so UCX never calls into freed
        // memory.
        unsafe { sys::ucp_worker_destroy(self.handle) };
    }
}

impl WorkerShared {
    /// Creates a worker of `ctx` in single-thread mode.
    pub(crate) fn create(ctx: &Context) -> Result<Rc<WorkerShared>> {
        let params = sys::ucp_worker_params_t {
            field_mask: sys::UCP_WORKER_PARAM_FIELD_THREAD_MODE as u64,
            thread_mode: sys::UCS_THREAD_MODE_SINGLE,
            ..Default::default()
        };
        let mut handle: sys::ucp_worker_h = ptr::null_mut();
        let (creating, before) = SignalSockets::before_create();
        // Safety: live context, valid params and out-pointer.
        check("ucp_worker_create", unsafe {
            sys::ucp_worker_create(ctx.inner.handle, &params, &mut handle)
        })?;
        let signals = SignalSockets::created_since(&before);
        drop(creating);
        let shared = Rc::new_cyclic(|weak| WorkerShared {
            handle,
            _ctx: ctx.inner.clone(),
            wakeup: ctx.inner.wakeup,
            efd: Cell::new(None),
            signals,
            spin: Cell::new(DEFAULT_SPIN_ITERATIONS),
            yield_every: Cell::new(0),
            in_progress: Cell::new(false),
            handlers: RefCell::new(HashMap::new()),
            cb_active: Cell::new(0),
            cb_seq: Cell::new(0),
            cb_outcome: Cell::new(CbOutcome::Kept),
            completions: Cell::new(0),
            panic: Cell::new(None),
            self_weak: weak.clone(),
            stale_close: RefCell::new(Vec::new()),
        });
        Ok(shared)
    }

    /// Sets the empty progress calls a wait spins through before it sleeps.
    pub(crate) fn set_spin(&self, n: u32) {
        self.spin.set(n);
    }

    /// The empty progress calls a wait spins through before it sleeps.
    pub(crate) fn spin(&self) -> u32 {
        self.spin.get()
    }

    /// Sets how many empty progress calls of a wait pass between two
    /// yields of the core (0: never).
    pub(crate) fn set_yield_every(&self, n: u32) {
        self.yield_every.set(n);
    }

    /// Empty progress calls between two yields of a wait (0: never).
    pub(crate) fn yield_every(&self) -> u32 {
        self.yield_every.get()
    }

    /// One `ucp_worker_progress` call. Panics if called from inside a UCX
    /// callback (UCX forbids it); resumes a panic raised by a handler.
    pub(crate) fn progress(&self) -> u32 {
        assert!(
            !self.in_progress.get(),
            "Worker::progress called from inside a UCX callback"
        );
        self.in_progress.set(true);
        // Safety: single-threaded worker, not re-entered (checked above).
        let n = unsafe { sys::ucp_worker_progress(self.handle) };
        self.in_progress.set(false);
        if let Some(p) = self.panic.take() {
            std::panic::resume_unwind(p);
        }
        n
    }

    pub(crate) fn event_fd(&self) -> Result<RawFd> {
        if let Some(fd) = self.efd.get() {
            return Ok(fd);
        }
        if !self.wakeup {
            return Err(Error::new(
                "ucp_worker_get_efd (context created without wake-up)",
                sys::UCS_ERR_UNSUPPORTED,
            ));
        }
        let mut fd: libc::c_int = -1;
        // Safety: live worker, valid out-pointer.
        check("ucp_worker_get_efd", unsafe {
            sys::ucp_worker_get_efd(self.handle, &mut fd)
        })?;
        self.efd.set(Some(fd));
        Ok(fd)
    }

    pub(crate) fn arm(&self) -> Result<bool> {
        // What is queued on the wake-up sockets is read here, so that a
        // datagram from outside the job does not make the arm fail.
        self.signals.drain(false);
        // Safety: live worker owned by this thread.
        let s = unsafe { sys::ucp_worker_arm(self.handle) };
        match s {
            sys::UCS_OK => Ok(true),
            sys::UCS_ERR_BUSY => Ok(false),
            s => Err(Error::new("ucp_worker_arm", s)),
        }
    }

    /// The wake-up sockets.
    pub(crate) fn signal_sockets(&self) -> &SignalSockets {
        &self.signals
    }

    /// After a wake-up from the event fd: reads the wake-up sockets and
    /// says whether only datagrams from outside the job woke the worker
    /// (then it may sleep again at once).
    pub(crate) fn woke(&self) -> Drained {
        self.signals.drain(true)
    }

    /// Progress until `done()` holds or `deadline` passes. Spins while
    /// there is work, then (with wake-up) arms the worker and sleeps on its
    /// event fd; without wake-up it keeps spinning.
    pub(crate) fn wait_until(
        &self,
        deadline: Instant,
        what: &str,
        mut done: impl FnMut() -> bool,
    ) -> Result<()> {
        let spin = self.spin.get().max(1);
        let yield_every = self.yield_every.get();
        let mut idle: u32 = 0;
        loop {
            if done() {
                return Ok(());
            }
            if self.progress() != 0 {
                idle = 0;
                continue;
            }
            idle += 1;
            if idle.is_multiple_of(256) && Instant::now() >= deadline {
                if done() {
                    return Ok(());
                }
                return Err(Error::timeout(format!("waiting for {what}")));
            }
            if yield_every != 0 && idle.is_multiple_of(yield_every) {
                // A thread woken on this core (the peer this wait is for,
                // when it shares the core) runs now instead of after the
                // spin; alone on the core this returns at once.
                // Safety: no arguments; cannot fail on Linux.
                unsafe { libc::sched_yield() };
            }
            if idle >= spin && self.wakeup {
                idle = 0;
                if !self.arm()? {
                    continue;
                }
                if done() {
                    return Ok(());
                }
                let now = Instant::now();
                if now >= deadline {
                    return Err(Error::timeout(format!("waiting for {what}")));
                }
                if self.sleep(deadline - now)? {
                    let d = self.woke();
                    if d.foreign > 0 && d.own == 0 {
                        // Only outsiders' datagrams: straight back to
                        // sleep after one empty progress.
                        idle = spin;
                    }
                }
            }
        }
    }

    /// Sleep on the event fd for at most `timeout` (the worker must be
    /// armed). Returns whether the fd became readable.
    pub(crate) fn sleep(&self, timeout: Duration) -> Result<bool> {
        let fd = self.event_fd()?;
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
        // Safety: one valid pollfd for the duration of the call.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                return Ok(false);
            }
            return Err(Error::new(
                "poll on the worker event fd",
                sys::UCS_ERR_IO_ERROR,
            ));
        }
        Ok(r > 0)
    }
}

/// What the worker needs to know of a registered AM handler.
pub(crate) trait RegisteredHandler {
    /// Whether the handler is running now (it cannot be replaced from
    /// inside itself).
    fn is_running(&self) -> bool;
}
