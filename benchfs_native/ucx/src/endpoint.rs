//! Endpoints: a connection from a worker to one peer worker.

use std::cell::Cell;
use std::ffi::{CString, c_void};
use std::fmt;
use std::ptr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::address::WorkerAddress;
use crate::am::{SendOptions, send_on};
use crate::buf::IoBuf;
use crate::error::{Error, Result, Status, StatusPtr, check, decode_ptr};
use crate::print::print_to_string;
use crate::request::Request;
use crate::shared::WorkerShared;
use crate::sys;

/// How an endpoint learns that its peer is gone.
///
/// The choice is a trade-off measured on UCX 1.13 (see
/// `docs/TRANSPORT.md`): `UCP_ERR_HANDLING_MODE_PEER` makes UCX detect a
/// dead peer and fail outstanding operations at once, but UCX then drops
/// every transport that cannot report peer failure, which on one host
/// means the shared-memory transports: only tcp remains. With
/// `UCP_ERR_HANDLING_MODE_NONE` shared memory stays, and a dead peer shows
/// up as an expired deadline of the wait that needed it (every wait of
/// this crate has one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ErrorMode {
    /// `UCP_ERR_HANDLING_MODE_NONE`: all transports, including shared
    /// memory; peer death is detected by deadlines. The default.
    #[default]
    Deadline,
    /// `UCP_ERR_HANDLING_MODE_PEER`: UCX reports peer failure (connection
    /// reset, keepalive timeout); network transports only. Use it for
    /// peers on other hosts, where shared memory is not possible anyway.
    Peer,
}

/// Options of [`crate::Worker::connect`].
#[derive(Clone, Debug, Default)]
pub struct EndpointOptions {
    /// Error handling mode.
    pub error_mode: ErrorMode,
    /// Name in UCX's logs.
    pub name: Option<String>,
}

impl EndpointOptions {
    /// Options with the given error mode.
    pub fn with_error_mode(error_mode: ErrorMode) -> Self {
        EndpointOptions {
            error_mode,
            name: None,
        }
    }
}

/// Peer-failure state, shared with UCX's error callback.
struct EpState {
    failed: Cell<Option<Status>>,
}

/// A connection to one peer worker (`ucp_ep_h`). Same thread as its
/// worker. Dropping it closes it (flush, bounded by a short deadline).
pub struct Endpoint {
    worker: Rc<WorkerShared>,
    handle: sys::ucp_ep_h,
    state: *mut EpState,
    mode: ErrorMode,
    closed: bool,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("handle", &self.handle)
            .field("mode", &self.mode)
            .field("failed", &self.failure())
            .finish()
    }
}

unsafe extern "C" fn ep_error_cb(arg: *mut c_void, _ep: sys::ucp_ep_h, status: Status) {
    // Safety: `arg` is the `EpState` registered in `connect`, which lives
    // until the endpoint is closed (or forever if the close never ends).
    let state = unsafe { &*(arg as *const EpState) };
    state.failed.set(Some(status));
}

impl Endpoint {
    pub(crate) fn connect(
        worker: &Rc<WorkerShared>,
        peer: &WorkerAddress,
        opts: EndpointOptions,
    ) -> Result<Endpoint> {
        let state = Box::into_raw(Box::new(EpState {
            failed: Cell::new(None),
        }));
        let name = opts
            .name
            .as_deref()
            .map(|n| CString::new(n).unwrap_or_default());
        let mut params = sys::ucp_ep_params_t {
            field_mask: (sys::UCP_EP_PARAM_FIELD_REMOTE_ADDRESS
                | sys::UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE) as u64,
            address: peer.as_bytes().as_ptr() as *const sys::ucp_address_t,
            err_mode: match opts.error_mode {
                ErrorMode::Deadline => sys::UCP_ERR_HANDLING_MODE_NONE,
                ErrorMode::Peer => sys::UCP_ERR_HANDLING_MODE_PEER,
            },
            ..Default::default()
        };
        if opts.error_mode == ErrorMode::Peer {
            params.field_mask |= sys::UCP_EP_PARAM_FIELD_ERR_HANDLER as u64;
            params.err_handler = sys::ucp_err_handler_t {
                cb: Some(ep_error_cb),
                arg: state.cast(),
            };
        }
        if let Some(n) = &name {
            params.field_mask |= sys::UCP_EP_PARAM_FIELD_NAME as u64;
            params.name = n.as_ptr();
        }
        let mut handle: sys::ucp_ep_h = ptr::null_mut();
        // Safety: live worker; the address bytes, name and params outlive
        // the call (UCX copies what it keeps); `state` outlives the
        // endpoint (freed only after a completed close).
        let r = check("ucp_ep_create", unsafe {
            sys::ucp_ep_create(worker.handle, &params, &mut handle)
        });
        if let Err(e) = r {
            // Safety: UCX did not keep `state` since creation failed.
            drop(unsafe { Box::from_raw(state) });
            return Err(e);
        }
        Ok(Endpoint {
            worker: worker.clone(),
            handle,
            state,
            mode: opts.error_mode,
            closed: false,
        })
    }

    /// The failure UCX reported for this endpoint (mode
    /// [`ErrorMode::Peer`] only), as an error naming the endpoint.
    pub fn failure(&self) -> Option<Error> {
        if self.state.is_null() {
            return None;
        }
        // Safety: `state` is non-null, so the endpoint is not closed and
        // the box is live.
        let failed = unsafe { (*self.state).failed.get() };
        failed.map(|s| Error::new("endpoint to peer (peer failure)", s))
    }

    /// The error mode this endpoint was created with.
    pub fn error_mode(&self) -> ErrorMode {
        self.mode
    }

    /// Send an active message: `header` (copied; at most the worker's
    /// `max_am_header`, a few KiB) and `payload` (owned until completion,
    /// then returned by the request). Small payloads go eagerly, large ones
    /// by rendezvous unless `opts` forces a protocol.
    pub fn am_send<B: IoBuf>(
        &self,
        id: u16,
        header: &[u8],
        payload: B,
        opts: SendOptions,
    ) -> Result<Request<B>> {
        if let Some(e) = self.failure() {
            return Err(e);
        }
        send_on(&self.worker, self.handle, id, header, payload, opts)
    }

    /// UCX's description of the endpoint: its lanes and the transport of
    /// each (`ucp_ep_print_info`).
    pub fn info(&self) -> String {
        print_to_string(|f| {
            // Safety: live endpoint; `f` is a valid FILE stream.
            unsafe { sys::ucp_ep_print_info(self.handle, f.cast()) }
        })
    }

    /// Whether one of the endpoint's lanes is a shared-memory transport
    /// (posix, sysv, xpmem, cma, knem), from [`Endpoint::info`].
    pub fn uses_shared_memory(&self) -> bool {
        let info = self.info();
        info.lines().filter(|l| l.contains("lane[")).any(|l| {
            ["posix/", "sysv/", "xpmem/", "cma/", "knem/"]
                .iter()
                .any(|t| l.contains(t))
        })
    }

    /// Flush the endpoint: every send posted so far has completed remotely
    /// (or failed), waiting until `deadline`.
    pub fn flush(&self, deadline: Instant) -> Result<()> {
        // Safety: `start` with a unit buffer; the call is one
        // `ucp_ep_flush_nbx` on our live endpoint with the given params.
        let req = unsafe {
            crate::request::start(
                &self.worker,
                "ucp_ep_flush_nbx",
                (),
                &[],
                crate::request::CbKind::Send,
                |param, _, _| sys::ucp_ep_flush_nbx(self.handle, param),
            )
        }?;
        req.wait(deadline)
    }

    /// Close the endpoint, waiting until `deadline`. A healthy endpoint is
    /// flushed first; a failed one (or one in [`ErrorMode::Peer`] whose
    /// flush fails) is closed with force. If the close does not finish in
    /// time the endpoint is abandoned to the worker, which releases it when
    /// it is destroyed, and a timeout error is returned.
    pub fn close(mut self, deadline: Instant) -> Result<()> {
        self.close_inner(deadline)
    }

    /// Start closing the endpoint and return at once: the close (a flush
    /// first, as [`Endpoint::close`]) advances as the worker is
    /// progressed; [`Closing`] tells when it has finished. No wait of its
    /// own, so a caller closing many endpoints bounds them all with one.
    pub fn start_close(mut self) -> Closing {
        let (req, status) = self.begin_close();
        Closing {
            ep: self,
            req,
            status,
        }
    }

    fn close_inner(&mut self, deadline: Instant) -> Result<()> {
        let (req, status) = self.begin_close();
        if req.is_null() {
            return check("ucp_ep_close_nbx", status);
        }
        let status = Cell::new(sys::UCS_INPROGRESS);
        let r = self.worker.wait_until(deadline, "ucp_ep_close_nbx", || {
            // Safety: `req` is live until freed below.
            status.set(unsafe { sys::ucp_request_check_status(req) });
            status.get() != sys::UCS_INPROGRESS
        });
        match r {
            Ok(()) => {
                // Safety: completed request, freed once.
                unsafe { sys::ucp_request_free(req) };
                self.free_state();
                check("ucp_ep_close_nbx", status.get())
            }
            Err(e) => {
                // Leave the request (and the error state, which UCX may
                // still call into) to the worker.
                self.worker.stale_close.borrow_mut().push(req);
                Err(e)
            }
        }
    }

    /// Posts the close: the request still in flight (null when the close
    /// ended at once) and, when it ended, its status.
    fn begin_close(&mut self) -> (*mut c_void, Status) {
        if self.closed {
            return (ptr::null_mut(), sys::UCS_OK);
        }
        self.closed = true;
        let force = self.mode == ErrorMode::Peer && self.failure().is_some();
        let param = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_FLAGS,
            flags: if force {
                sys::UCP_EP_CLOSE_FLAG_FORCE
            } else {
                0
            },
            ..Default::default()
        };
        // Safety: live endpoint, closed once (guarded by `closed`); no
        // callback, so the request (if any) is polled and freed by the
        // caller.
        let ret = unsafe { sys::ucp_ep_close_nbx(self.handle, &param) };
        match decode_ptr(ret) {
            StatusPtr::Done => {
                self.free_state();
                (ptr::null_mut(), sys::UCS_OK)
            }
            StatusPtr::Failed(s) => {
                self.free_state();
                (ptr::null_mut(), s)
            }
            StatusPtr::Pending(req) => (req, sys::UCS_INPROGRESS),
        }
    }

    fn free_state(&mut self) {
        if !self.state.is_null() {
            // Safety: the endpoint is closed, UCX will not call the error
            // callback any more; the box is freed once.
            drop(unsafe { Box::from_raw(self.state) });
            self.state = ptr::null_mut();
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if !self.closed {
            let deadline = Instant::now() + Duration::from_millis(500);
            let _ = self.close_inner(deadline);
        }
    }
}

/// A close under way ([`Endpoint::start_close`]). Dropped before it has
/// finished, it is left to the worker, which releases it when it is
/// destroyed (as a [`Endpoint::close`] past its deadline).
pub struct Closing {
    ep: Endpoint,
    /// The close request; null once it has finished.
    req: *mut c_void,
    /// Its status once finished.
    status: Status,
}

impl fmt::Debug for Closing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Closing")
            .field("handle", &self.ep.handle)
            .field("finished", &self.req.is_null())
            .finish()
    }
}

impl Closing {
    /// The close's outcome once it has finished; `None` while under way
    /// (it advances as the worker is progressed).
    pub fn poll(&mut self) -> Option<Result<()>> {
        if !self.req.is_null() {
            // Safety: `req` is live until freed here, once.
            let status = unsafe { sys::ucp_request_check_status(self.req) };
            if status == sys::UCS_INPROGRESS {
                return None;
            }
            // Safety: completed request, freed once (nulled below).
            unsafe { sys::ucp_request_free(self.req) };
            self.req = ptr::null_mut();
            self.ep.free_state();
            self.status = status;
        }
        Some(check("ucp_ep_close_nbx", self.status))
    }

    /// Progresses the worker until the close has finished or `deadline`
    /// has passed (then the close is still left under way).
    pub fn wait(&mut self, deadline: Instant) -> Result<()> {
        let worker = Rc::clone(&self.ep.worker);
        let mut outcome = None;
        worker.wait_until(deadline, "ucp_ep_close_nbx", || {
            outcome = self.poll();
            outcome.is_some()
        })?;
        outcome.unwrap_or(Ok(()))
    }
}

impl Drop for Closing {
    fn drop(&mut self) {
        if !self.req.is_null() {
            // The request (and the error state, which UCX may still call
            // into) go to the worker; the endpoint itself is closed.
            self.ep
                .worker
                .stale_close
                .borrow_mut()
                .push(std::mem::replace(&mut self.req, ptr::null_mut()));
        }
    }
}
