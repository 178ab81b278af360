//! Active messages: handlers on the receiving worker, sends on endpoints.
//!
//! Receiving. A handler registered with [`crate::Worker::set_am_handler`]
//! gets every message of its id as an owned [`AmMessage`], from inside
//! `ucp_worker_progress`. Eager data stays in UCX's receive buffer (the
//! handler is registered with `UCP_AM_FLAG_PERSISTENT_DATA`), readable in
//! place through [`AmMessage::data`] and released when the message is
//! dropped. Rendezvous data has not moved yet: [`AmMessage::recv_into`]
//! starts `ucp_am_recv_data_nbx` straight into a caller-provided buffer.
//! The handler may keep the message (queue it for later) or drop it; the
//! callback then tells UCX which one happened (`UCS_INPROGRESS` when kept,
//! `UCS_OK` when dropped or consumed).

use std::cell::RefCell;
use std::ffi::c_void;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;
use std::rc::{Rc, Weak};

use crate::buf::{IoBuf, IoBufMut};
use crate::error::{Error, Result, Status, check};
use crate::header::HeaderCopy;
use crate::request::{CbKind, Request, start};
use crate::shared::{CbOutcome, RegisteredHandler, WorkerShared};
use crate::sys;

/// Which AM protocol a send uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Proto {
    /// UCX chooses by size (eager below its rendezvous threshold).
    #[default]
    Auto,
    /// `UCP_AM_SEND_FLAG_EAGER`.
    Eager,
    /// `UCP_AM_SEND_FLAG_RNDV`.
    Rndv,
}

/// Options of an AM send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SendOptions {
    /// Protocol.
    pub proto: Proto,
    /// Ask UCX to pass a reply endpoint to the receiving handler
    /// (`UCP_AM_SEND_FLAG_REPLY`), usable with [`AmMessage::reply`].
    pub reply: bool,
}

impl SendOptions {
    /// Force eager.
    pub fn eager() -> Self {
        SendOptions {
            proto: Proto::Eager,
            reply: false,
        }
    }

    /// Force rendezvous.
    pub fn rndv() -> Self {
        SendOptions {
            proto: Proto::Rndv,
            reply: false,
        }
    }

    /// Same options, with a reply endpoint for the receiver.
    pub fn with_reply(mut self) -> Self {
        self.reply = true;
        self
    }
}

pub(crate) type HandlerFn = dyn FnMut(AmMessage);

/// A registered handler; its address is the `arg` UCX passes back.
pub(crate) struct HandlerSlot {
    worker: Weak<WorkerShared>,
    id: u16,
    f: RefCell<Box<HandlerFn>>,
}

impl RegisteredHandler for HandlerSlot {
    fn is_running(&self) -> bool {
        self.f.try_borrow_mut().is_err()
    }
}

/// Where the message body is.
enum Body {
    /// No data.
    Empty,
    /// Eager data held in UCX's buffer until `ucp_am_data_release`.
    Held { desc: *mut c_void, len: usize },
    /// Rendezvous descriptor, not yet received.
    Rndv { desc: *mut c_void, len: usize },
    /// Rendezvous data whose receive was started (nothing left to free).
    Gone { len: usize },
    /// Data copied out of a buffer UCX did not let us keep.
    Owned(Vec<u8>),
}

/// One received active message. Owned by the handler, which may keep it
/// past the callback (same thread only); dropping it releases UCX's data.
pub struct AmMessage {
    worker: Rc<WorkerShared>,
    id: u16,
    header: HeaderCopy,
    body: Body,
    reply_ep: sys::ucp_ep_h,
    /// Sequence number of the callback that delivered it.
    seq: u64,
}

impl fmt::Debug for AmMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AmMessage")
            .field("id", &self.id)
            .field("header_len", &self.header.as_slice().len())
            .field("len", &self.len())
            .field("rndv", &self.is_rndv())
            .finish()
    }
}

impl AmMessage {
    /// The AM id.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// The user header.
    pub fn header(&self) -> &[u8] {
        self.header.as_slice()
    }

    /// Payload length in bytes (for rendezvous: the size to receive).
    pub fn len(&self) -> usize {
        match self.body {
            Body::Empty => 0,
            Body::Held { len, .. } | Body::Rndv { len, .. } | Body::Gone { len } => len,
            Body::Owned(ref v) => v.len(),
        }
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the payload came by rendezvous and must be received with
    /// [`AmMessage::recv_into`].
    pub fn is_rndv(&self) -> bool {
        matches!(self.body, Body::Rndv { .. })
    }

    /// Eager payload, in place in UCX's buffer. `None` for rendezvous.
    pub fn data(&self) -> Option<&[u8]> {
        match self.body {
            Body::Empty => Some(&[]),
            Body::Held { desc, len } => {
                // Safety: UCX keeps `len` bytes at `desc` until
                // `ucp_am_data_release`, which only our `Drop` calls.
                Some(unsafe { std::slice::from_raw_parts(desc as *const u8, len) })
            }
            Body::Owned(ref v) => Some(v),
            Body::Rndv { .. } | Body::Gone { .. } => None,
        }
    }

    /// Whether the sender asked for a reply endpoint.
    pub fn can_reply(&self) -> bool {
        !self.reply_ep.is_null()
    }

    /// Whether the callback that delivered this message is still running.
    fn in_callback(&self) -> bool {
        self.worker.cb_active.get() == self.seq
    }

    /// Receive the payload into `buf` (at least [`AmMessage::len`] bytes of
    /// capacity), consuming the message. Rendezvous: starts
    /// `ucp_am_recv_data_nbx` into `buf`, completing as the data arrives.
    /// Eager: copies the bytes and completes at once.
    pub fn recv_into<B: IoBufMut>(mut self, mut buf: B) -> Result<Request<B>> {
        self.check_room(&mut buf)?;
        match self.body {
            Body::Rndv { desc, len } => {
                if self.in_callback() {
                    self.worker.cb_outcome.set(CbOutcome::Consumed);
                }
                self.body = Body::Gone { len };
                // Safety: one `ucp_am_recv_data_nbx` on the live rendezvous
                // descriptor (UCX takes it over, even on failure) into the
                // buffer owned by the request, whose capacity was checked.
                unsafe {
                    start(
                        &self.worker,
                        "ucp_am_recv_data_nbx",
                        buf,
                        &[],
                        CbKind::RecvAm,
                        |param, b, _| {
                            sys::ucp_am_recv_data_nbx(
                                self.worker.handle,
                                desc,
                                b.stable_mut_ptr().cast(),
                                len,
                                param,
                            )
                        },
                    )
                }
            }
            _ => {
                let data_len = self.copy_data(&mut buf);
                let worker = self.worker.clone();
                drop(self);
                // Safety: a request that completes at once without any UCX
                // call (NULL status pointer); like UCX, it reports the
                // length through `recv_info.length`, which `start` points at
                // the request's own length cell.
                unsafe {
                    start(
                        &worker,
                        "am data copy",
                        buf,
                        &[],
                        CbKind::RecvAm,
                        |param, _, _| {
                            *param.recv_info.length = data_len;
                            ptr::null_mut()
                        },
                    )
                }
            }
        }
    }

    /// Copies eager data into `buf` (at least [`AmMessage::len`] bytes of
    /// capacity) with no request to create or wait for: the length copied.
    /// `None` for rendezvous data, which [`AmMessage::recv_into`] receives.
    pub fn copy_into<B: IoBufMut>(&self, buf: &mut B) -> Option<Result<usize>> {
        if matches!(self.body, Body::Rndv { .. } | Body::Gone { .. }) {
            return None;
        }
        Some(self.check_room(buf).map(|()| self.copy_data(buf)))
    }

    fn check_room<B: IoBufMut>(&self, buf: &mut B) -> Result<()> {
        let len = self.len();
        if buf.bytes_total() < len {
            return Err(Error::new(
                format!(
                    "ucp_am_recv_data_nbx: buffer of {} bytes for {len}",
                    buf.bytes_total()
                ),
                sys::UCS_ERR_MESSAGE_TRUNCATED,
            ));
        }
        Ok(())
    }

    /// Copies the eager data into `buf`, whose room was checked.
    fn copy_data<B: IoBufMut>(&self, buf: &mut B) -> usize {
        let data = self.data().unwrap_or(&[]);
        // Safety: the caller checked the room; the regions do not overlap
        // (UCX's buffer vs the caller's).
        unsafe {
            ptr::copy_nonoverlapping(data.as_ptr(), buf.stable_mut_ptr(), data.len());
            buf.set_init(data.len());
        }
        data.len()
    }

    /// Send an active message back to the sender, from inside the handler
    /// that received this message (the reply endpoint UCX passes is only
    /// guaranteed for the duration of the callback). The sender must have
    /// used [`SendOptions::with_reply`].
    pub fn reply<B: IoBuf>(
        &self,
        id: u16,
        header: &[u8],
        payload: B,
        opts: SendOptions,
    ) -> Result<Request<B>> {
        if self.reply_ep.is_null() {
            return Err(Error::new(
                "AM reply (sender did not set UCP_AM_SEND_FLAG_REPLY)",
                sys::UCS_ERR_INVALID_PARAM,
            ));
        }
        if !self.in_callback() {
            return Err(Error::new(
                "AM reply outside the receiving handler",
                sys::UCS_ERR_INVALID_PARAM,
            ));
        }
        send_on(&self.worker, self.reply_ep, id, header, payload, opts)
    }
}

impl Drop for AmMessage {
    fn drop(&mut self) {
        let desc = match self.body {
            Body::Held { desc, .. } | Body::Rndv { desc, .. } => desc,
            Body::Empty | Body::Gone { .. } | Body::Owned(_) => return,
        };
        if self.in_callback() {
            // Still inside the callback: tell UCX through the return value.
            self.worker.cb_outcome.set(CbOutcome::Released);
        } else {
            // Safety: a descriptor kept past its callback (`UCS_INPROGRESS`
            // was returned) and released exactly once. For a rendezvous
            // descriptor UCX completes the sender's request.
            unsafe { sys::ucp_am_data_release(self.worker.handle, desc) };
        }
    }
}

unsafe extern "C" fn am_recv_cb(
    arg: *mut c_void,
    header: *const c_void,
    header_length: usize,
    data: *mut c_void,
    length: usize,
    param: *const sys::ucp_am_recv_param_t,
) -> Status {
    // Safety: `arg` is the boxed `HandlerSlot` registered for this id; it
    // is unregistered from UCX before the box is freed.
    let slot = unsafe { &*(arg as *const HandlerSlot) };
    let Some(worker) = slot.worker.upgrade() else {
        return sys::UCS_OK;
    };
    // Safety: UCX passes a valid parameter struct for the callback.
    let param = unsafe { &*param };
    let rndv = param.recv_attr & sys::UCP_AM_RECV_ATTR_FLAG_RNDV as u64 != 0;
    let held = param.recv_attr & sys::UCP_AM_RECV_ATTR_FLAG_DATA as u64 != 0;
    let reply_ep = if param.recv_attr & sys::UCP_AM_RECV_ATTR_FIELD_REPLY_EP as u64 != 0 {
        param.reply_ep
    } else {
        ptr::null_mut()
    };
    let hdr: &[u8] = if header_length == 0 || header.is_null() {
        &[]
    } else {
        // Safety: UCX passes `header_length` readable header bytes, valid
        // during the callback (copied into the message below).
        unsafe { std::slice::from_raw_parts(header as *const u8, header_length) }
    };
    let body = if rndv {
        Body::Rndv {
            desc: data,
            len: length,
        }
    } else if held {
        Body::Held {
            desc: data,
            len: length,
        }
    } else if length == 0 {
        Body::Empty
    } else {
        // Not persistent (UCX did not offer to keep it): copy.
        // Safety: `length` readable bytes at `data` during the callback.
        Body::Owned(unsafe { std::slice::from_raw_parts(data as *const u8, length) }.to_vec())
    };
    let holds_desc = matches!(body, Body::Held { .. } | Body::Rndv { .. });
    let seq = worker.cb_seq.get() + 1;
    worker.cb_seq.set(seq);
    let msg = AmMessage {
        worker: worker.clone(),
        id: slot.id,
        header: HeaderCopy::new(hdr),
        body,
        reply_ep,
        seq,
    };
    let prev_active = worker.cb_active.replace(seq);
    worker.cb_outcome.set(CbOutcome::Kept);
    let result = match slot.f.try_borrow_mut() {
        Ok(mut f) => catch_unwind(AssertUnwindSafe(|| (f)(msg))),
        // Re-entered (cannot happen: progress is not re-entrant): drop it.
        Err(_) => {
            drop(msg);
            Ok(())
        }
    };
    worker.cb_active.set(prev_active);
    if let Err(p) = result {
        worker.panic.set(Some(p));
    }
    if !holds_desc {
        return sys::UCS_OK;
    }
    match worker.cb_outcome.get() {
        CbOutcome::Kept => sys::UCS_INPROGRESS,
        CbOutcome::Consumed => sys::UCS_OK,
        CbOutcome::Released if rndv => sys::UCS_ERR_CANCELED,
        CbOutcome::Released => sys::UCS_OK,
    }
}

/// Register (or replace) the handler of AM `id`.
pub(crate) fn set_handler(worker: &Rc<WorkerShared>, id: u16, f: Box<HandlerFn>) -> Result<()> {
    let slot = Box::new(HandlerSlot {
        worker: worker.self_weak.clone(),
        id,
        f: RefCell::new(f),
    });
    let param = sys::ucp_am_handler_param_t {
        field_mask: (sys::UCP_AM_HANDLER_PARAM_FIELD_ID
            | sys::UCP_AM_HANDLER_PARAM_FIELD_FLAGS
            | sys::UCP_AM_HANDLER_PARAM_FIELD_CB
            | sys::UCP_AM_HANDLER_PARAM_FIELD_ARG) as u64,
        id: id as u32,
        flags: sys::UCP_AM_FLAG_WHOLE_MSG | sys::UCP_AM_FLAG_PERSISTENT_DATA,
        cb: Some(am_recv_cb),
        arg: &*slot as *const HandlerSlot as *mut c_void,
    };
    let mut handlers = worker.handlers.try_borrow_mut().map_err(|_| {
        Error::new(
            "ucp_worker_set_am_recv_handler from inside a handler",
            sys::UCS_ERR_INVALID_PARAM,
        )
    })?;
    if let Some(old) = handlers.get(&id)
        && old.is_running()
    {
        return Err(Error::new(
            format!("ucp_worker_set_am_recv_handler({id}) from inside its own handler"),
            sys::UCS_ERR_INVALID_PARAM,
        ));
    }
    // Safety: live worker; the slot is boxed (stable address) and stored in
    // the worker until replaced or the worker is destroyed.
    check(&format!("ucp_worker_set_am_recv_handler({id})"), unsafe {
        sys::ucp_worker_set_am_recv_handler(worker.handle, &param)
    })?;
    handlers.insert(id, slot);
    Ok(())
}

/// Unregister the handler of AM `id` (incoming messages of that id are
/// then dropped by UCX).
pub(crate) fn clear_handler(worker: &Rc<WorkerShared>, id: u16) -> Result<()> {
    let mut handlers = worker.handlers.try_borrow_mut().map_err(|_| {
        Error::new(
            "clearing an AM handler from inside a handler",
            sys::UCS_ERR_INVALID_PARAM,
        )
    })?;
    let param = sys::ucp_am_handler_param_t {
        field_mask: (sys::UCP_AM_HANDLER_PARAM_FIELD_ID | sys::UCP_AM_HANDLER_PARAM_FIELD_CB)
            as u64,
        id: id as u32,
        cb: None,
        ..Default::default()
    };
    // Safety: live worker; a NULL callback unregisters the id.
    let status = unsafe { sys::ucp_worker_set_am_recv_handler(worker.handle, &param) };
    check(
        &format!("ucp_worker_set_am_recv_handler({id}, NULL)"),
        status,
    )?;
    handlers.remove(&id);
    Ok(())
}

/// Post `ucp_am_send_nbx` on `ep` (an endpoint of `worker`, or a reply
/// endpoint UCX handed to the current callback).
pub(crate) fn send_on<B: IoBuf>(
    worker: &Rc<WorkerShared>,
    ep: sys::ucp_ep_h,
    id: u16,
    header: &[u8],
    payload: B,
    opts: SendOptions,
) -> Result<Request<B>> {
    let mut flags = match opts.proto {
        Proto::Auto => 0,
        Proto::Eager => sys::UCP_AM_SEND_FLAG_EAGER,
        Proto::Rndv => sys::UCP_AM_SEND_FLAG_RNDV,
    };
    if opts.reply {
        flags |= sys::UCP_AM_SEND_FLAG_REPLY;
    }
    // Safety: one `ucp_am_send_nbx` on a live endpoint; header and payload
    // are owned by the request state until completion.
    unsafe {
        start(
            worker,
            "ucp_am_send_nbx",
            payload,
            header,
            CbKind::Send,
            |param, b, h| {
                let mut p = *param;
                p.op_attr_mask |= sys::UCP_OP_ATTR_FIELD_FLAGS;
                p.flags = flags;
                let (hp, hl) = match h {
                    Some(h) => (h.as_ptr() as *const c_void, h.len()),
                    None => (ptr::null(), 0),
                };
                sys::ucp_am_send_nbx(
                    ep,
                    id as u32,
                    hp,
                    hl,
                    b.stable_ptr().cast(),
                    b.bytes_init(),
                    &p,
                )
            },
        )
    }
}
