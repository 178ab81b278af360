//! A call in flight: its deadline, its UCX requests and the buffers they
//! own, its retries.

use std::time::{Duration, Instant};

use benchfs_ucx::{IoBuf, Request as UcxRequest};

use super::call::Call;
use crate::rpc::client::buf::{Piece, SharedBuf};
use crate::rpc::wire::Attr;

/// Why a call failed.
#[derive(Debug, Clone)]
pub(super) struct Failure {
    pub(super) errno: i32,
    pub(super) detail: String,
}

/// What a reply with a payload still waits for.
#[derive(Debug, Clone, Copy)]
pub(super) enum Got {
    Read(u64),
    Dir {
        count: u32,
        next_cursor: u64,
        eof: bool,
    },
    Json,
    Ping(u64),
    Link(Attr),
}

/// A send's payload: nothing, or a piece of a shared buffer.
pub(super) enum SendBuf {
    Empty,
    Data(Piece),
}

// Safety: `Empty` is a valid zero-length region at a dangling, aligned,
// non-null pointer; `Data` delegates to `Piece`, whose region is stable.
unsafe impl IoBuf for SendBuf {
    fn stable_ptr(&self) -> *const u8 {
        match self {
            SendBuf::Empty => std::ptr::NonNull::<u8>::dangling().as_ptr(),
            SendBuf::Data(p) => p.stable_ptr(),
        }
    }
    fn bytes_init(&self) -> usize {
        match self {
            SendBuf::Empty => 0,
            SendBuf::Data(p) => p.bytes_init(),
        }
    }
}

pub(super) struct Pending {
    pub(super) call: Call,
    pub(super) first_issue: Instant,
    pub(super) issued: Instant,
    pub(super) deadline: Instant,
    pub(super) limit: Duration,
    pub(super) send: Option<UcxRequest<SendBuf>>,
    pub(super) sent: Option<Instant>,
    pub(super) got: Option<Got>,
    pub(super) recv: Option<UcxRequest<Piece>>,
    pub(super) scratch: Option<SharedBuf>,
    pub(super) retries: u16,
    pub(super) resume_at: Option<Instant>,
    /// This call is a ping probing whether the node of the boxed call (which
    /// failed as given) is still reachable.
    pub(super) probe_of: Option<(Box<Pending>, Failure)>,
    /// This call is a ping checking the liveness of its node, sent because
    /// another call to it was slow (module `liveness`).
    pub(super) liveness_probe: bool,
}

impl Pending {
    pub(super) fn new(call: Call, limit: Duration, now: Instant) -> Pending {
        Pending {
            call,
            first_issue: now,
            issued: now,
            deadline: crate::deadline::after_from(now, limit),
            limit,
            send: None,
            sent: None,
            got: None,
            recv: None,
            scratch: None,
            retries: 0,
            resume_at: None,
            probe_of: None,
            liveness_probe: false,
        }
    }

    pub(super) fn io_done(&self) -> bool {
        self.send.as_ref().is_some_and(UcxRequest::is_done) || self.recv_done()
    }

    /// Whether the reply's payload has been received (or its receive failed).
    pub(super) fn recv_done(&self) -> bool {
        self.recv.as_ref().is_some_and(UcxRequest::is_done)
    }
}

pub(super) fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
