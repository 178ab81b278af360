//! In-flight UCX requests and their completion.
//!
//! Contract with UCX (`ucp_*_nbx` with a callback and `user_data`):
//! - the call returns NULL (completed at once: the callback is *not*
//!   called), an error pointer (failed at once: no callback), or a request
//!   handle (the callback runs later, from `ucp_worker_progress`, exactly
//!   once, and the handle stays allocated until `ucp_request_free`);
//! - `user_data` is one strong reference to the operation's [`OpState`]
//!   (`Rc::into_raw`), which owns the buffers UCX reads or writes; the
//!   callback takes that reference back, so the buffers outlive the
//!   operation whatever the caller does;
//! - the [`Request`] handle frees the UCX request once it has seen the
//!   completion; a handle dropped earlier marks the state `detached`, and
//!   the callback frees the UCX request itself.

use std::cell::{Cell, UnsafeCell};
use std::ffi::c_void;
use std::fmt;
use std::rc::Rc;
use std::time::Instant;

use crate::error::{Error, Result, Status, StatusPtr, decode_ptr};
use crate::header::HeaderCopy;
use crate::shared::WorkerShared;
use crate::sys;

pub(crate) struct OpState<B> {
    status: Cell<Option<Status>>,
    length: Cell<usize>,
    detached: Cell<bool>,
    buf: UnsafeCell<Option<B>>,
    // Kept alive until completion: UCX may read the header until then. In
    // the state's own allocation when short: a send allocates once.
    header: Option<HeaderCopy>,
    pub(crate) worker: Rc<WorkerShared>,
    what: &'static str,
}

/// A UCX operation in flight (an AM send or a rendezvous receive). It owns
/// the buffer, which comes back from [`Request::wait`] or
/// [`Request::try_take`]. Dropping it before completion is safe: the
/// operation continues and the buffer is freed when it completes.
pub struct Request<B> {
    state: Rc<OpState<B>>,
    req: *mut c_void,
}

impl<B> fmt::Debug for Request<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("what", &self.state.what)
            .field("status", &self.state.status.get())
            .finish()
    }
}

/// Which `cb` member of `ucp_request_param_t` the operation uses.
#[derive(Clone, Copy)]
pub(crate) enum CbKind {
    Send,
    RecvAm,
}

/// Starts an operation: `call` receives the prepared parameters (callback,
/// `user_data`, and for receives the `recv_info.length` out-pointer) and
/// performs the `ucp_*_nbx` call. `header` (empty: none) is copied into
/// the operation's state, where it stays put until completion.
///
/// # Safety
/// `call` must make exactly one `ucp_*_nbx` call that uses `param` as
/// given (callback of kind `kind`), on buffers owned by `buf` or `header`,
/// and return its result.
pub(crate) unsafe fn start<B: 'static>(
    worker: &Rc<WorkerShared>,
    what: &'static str,
    buf: B,
    header: &[u8],
    kind: CbKind,
    call: impl FnOnce(&sys::ucp_request_param_t, &mut B, Option<&[u8]>) -> sys::ucs_status_ptr_t,
) -> Result<Request<B>> {
    let state = Rc::new(OpState {
        status: Cell::new(None),
        length: Cell::new(0),
        detached: Cell::new(false),
        buf: UnsafeCell::new(Some(buf)),
        header: (!header.is_empty()).then(|| HeaderCopy::new(header)),
        worker: worker.clone(),
        what,
    });
    let mut param = sys::ucp_request_param_t {
        op_attr_mask: sys::UCP_OP_ATTR_FIELD_CALLBACK | sys::UCP_OP_ATTR_FIELD_USER_DATA,
        ..Default::default()
    };
    match kind {
        CbKind::Send => param.cb.send = Some(send_cb::<B>),
        CbKind::RecvAm => {
            param.cb.recv_am = Some(recv_am_cb::<B>);
            param.op_attr_mask |= sys::UCP_OP_ATTR_FIELD_RECV_INFO;
            param.recv_info.length = state.length.as_ptr();
        }
    }
    let user_data = Rc::into_raw(state.clone());
    param.user_data = user_data as *mut c_void;

    // Safety: nothing else accesses the buffer slot until the operation
    // completes (the handle does not exist yet); the buffer is moved into
    // the heap-allocated state, and `IoBuf`/`IoBufMut` guarantee its bytes
    // stay put for as long as the state lives.
    let buf_ref = unsafe { (*state.buf.get()).as_mut() }.expect("buffer present");
    let ret = call(
        &param,
        buf_ref,
        state.header.as_ref().map(HeaderCopy::as_slice),
    );

    match decode_ptr(ret) {
        StatusPtr::Done | StatusPtr::Failed(_) => {
            // Safety: no request was created, so the callback will never
            // run; take back the reference handed over as `user_data`.
            drop(unsafe { Rc::from_raw(user_data) });
            match decode_ptr(ret) {
                StatusPtr::Failed(s) => Err(Error::new(what, s)),
                _ => {
                    state.status.set(Some(sys::UCS_OK));
                    Ok(Request {
                        state,
                        req: std::ptr::null_mut(),
                    })
                }
            }
        }
        StatusPtr::Pending(req) => Ok(Request { state, req }),
    }
}

/// Shared completion path of both callback kinds.
///
/// # Safety
/// `user_data` must be the pointer produced by `Rc::into_raw` in [`start`]
/// for an `OpState<B>` and not yet taken back; `req` is the request handle
/// the callback was invoked for.
unsafe fn complete<B>(
    req: *mut c_void,
    status: Status,
    length: Option<usize>,
    user_data: *mut c_void,
) {
    // Safety: per the contract, this is the reference given to UCX.
    let state = unsafe { Rc::from_raw(user_data as *const OpState<B>) };
    if let Some(len) = length {
        state.length.set(len);
    }
    state.status.set(Some(status));
    let done = &state.worker.completions;
    done.set(done.get().wrapping_add(1));
    if state.detached.get() {
        // Safety: the handle is gone and will never free `req`; UCX allows
        // freeing a completed request from its callback.
        unsafe { sys::ucp_request_free(req) };
    }
    drop(state);
}

unsafe extern "C" fn send_cb<B>(req: *mut c_void, status: Status, user_data: *mut c_void) {
    // Safety: registered by `start` with `user_data` from `Rc::into_raw`.
    unsafe { complete::<B>(req, status, None, user_data) }
}

unsafe extern "C" fn recv_am_cb<B>(
    req: *mut c_void,
    status: Status,
    length: usize,
    user_data: *mut c_void,
) {
    // Safety: registered by `start` with `user_data` from `Rc::into_raw`.
    unsafe { complete::<B>(req, status, Some(length), user_data) }
}

impl<B> Request<B> {
    /// Whether the operation has completed (successfully or not).
    pub fn is_done(&self) -> bool {
        self.state.status.get().is_some()
    }

    /// What this request is (e.g. `"ucp_am_send_nbx"`).
    pub fn what(&self) -> &'static str {
        self.state.what
    }

    /// The result if complete: the buffer back, or the error. A request
    /// still in flight is returned unchanged as `Err(self)`.
    pub fn try_take(self) -> std::result::Result<Result<B>, Self> {
        match self.state.status.get() {
            None => Err(self),
            Some(s) => Ok(self.finish(s)),
        }
    }

    /// Bytes received (receives only; valid once complete).
    pub fn received_len(&self) -> usize {
        self.state.length.get()
    }

    fn finish(mut self, status: Status) -> Result<B> {
        self.free_request();
        // Safety: the operation is complete, so UCX no longer touches the
        // buffer, and the callback has already run (or never will).
        let buf = unsafe { (*self.state.buf.get()).take() };
        if status != sys::UCS_OK {
            return Err(Error::new(self.state.what, status));
        }
        Ok(buf.expect("buffer taken once"))
    }

    fn free_request(&mut self) {
        if !self.req.is_null() {
            // Safety: the request completed (its callback has run) and
            // this handle frees it exactly once.
            unsafe { sys::ucp_request_free(self.req) };
            self.req = std::ptr::null_mut();
        }
    }

    /// Progress the worker until this request completes or `deadline`
    /// passes; returns the buffer (for a receive: filled with
    /// [`Request::received_len`] bytes).
    pub fn wait(self, deadline: Instant) -> Result<B> {
        let what = self.state.what;
        self.wait_named(deadline, what)
    }

    /// Like [`Request::wait`], with the timeout error naming `what` (e.g.
    /// `"write of chunk 12 to node3"`) instead of the UCX call.
    pub fn wait_named(self, deadline: Instant, what: &str) -> Result<B> {
        let worker = self.state.worker.clone();
        worker.wait_until(deadline, what, || self.is_done())?;
        let status = self.state.status.get().expect("completed");
        self.finish(status)
    }

    /// Cancel the operation (`ucp_request_cancel`); it then completes with
    /// `UCS_ERR_CANCELED` on a later progress.
    pub fn cancel(&self) {
        if !self.req.is_null() && !self.is_done() {
            // Safety: the request is live (not completed, not freed).
            unsafe { sys::ucp_request_cancel(self.state.worker.handle, self.req) };
        }
    }
}

impl<B: crate::buf::IoBufMut> Request<B> {
    /// Like [`Request::wait`], for receives into a `Vec`-like buffer: the
    /// received length is applied to the buffer.
    pub fn wait_filled(self, deadline: Instant) -> Result<B> {
        let worker = self.state.worker.clone();
        let what = self.state.what;
        worker.wait_until(deadline, what, || self.is_done())?;
        let len = self.state.length.get();
        let status = self.state.status.get().expect("completed");
        let mut buf = self.finish(status)?;
        // Safety: UCX completed the receive of `len` bytes into the buffer.
        unsafe { buf.set_init(len) };
        Ok(buf)
    }
}

impl<B> Drop for Request<B> {
    fn drop(&mut self) {
        if self.is_done() {
            self.free_request();
        } else {
            // The callback frees the request and the state when it runs.
            self.state.detached.set(true);
        }
    }
}
