//! What a caller sends the driver thread (one [`Request`] per piece) and
//! what comes back on its reply channel ([`Done`]).

use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::time::Instant;

use super::answer::{Answer, Failure};
use crate::storage::buffer::FixedBuf;

/// A piece's result, sent back to its caller.
pub(super) struct Done {
    pub(super) index: usize,
    pub(super) want: usize,
    pub(super) result: std::result::Result<u64, Failure>,
    pub(super) buf: Option<FixedBuf>,
}

/// Who waits for a piece's result.
pub(super) enum To {
    /// A blocking call, on its batch's channel.
    Caller(Sender<Done>),
    /// A request started without waiting (`submit`).
    Loop(Answer),
}

/// Where a piece's result goes. Dropping a `Reply` that was not answered
/// answers it with `Closed`, so a caller never waits for a lost request.
pub(super) struct Reply {
    pub(super) to: Option<To>,
    pub(super) index: usize,
    pub(super) want: usize,
    pub(super) done_bytes: u64,
    /// The modification time (ns since the epoch) set on the descriptor
    /// once a truncate succeeded.
    pub(super) mtime_after: Option<u64>,
}

impl Reply {
    pub(super) fn send(mut self, result: std::result::Result<u64, Failure>, buf: Option<FixedBuf>) {
        self.answer(result, buf);
    }

    /// A started write's data goes into its registered buffer here, on the
    /// driver thread, so the starting thread does not spend the copy.
    pub(super) fn fill(&self, buf: &mut FixedBuf) {
        if let Some(To::Loop(a)) = &self.to {
            a.fill(buf);
        }
    }

    /// Whether a write is made durable (fsync) before it is answered.
    pub(super) fn sync_after(&self) -> bool {
        matches!(&self.to, Some(To::Loop(a)) if a.sync_after())
    }

    fn answer(&mut self, result: std::result::Result<u64, Failure>, buf: Option<FixedBuf>) {
        match self.to.take() {
            Some(To::Caller(tx)) => {
                let _ = tx.send(Done {
                    index: self.index,
                    want: self.want,
                    result,
                    buf,
                });
            }
            Some(To::Loop(a)) => a.finish(result, buf, self.want),
            None => {}
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        self.answer(Err(Failure::Closed), None);
    }
}

pub(super) enum ReqKind {
    Write {
        offset: u64,
        buf: FixedBuf,
        direct: bool,
    },
    Read {
        offset: u64,
        buf: FixedBuf,
        len: usize,
        direct: bool,
    },
    Fsync,
    Truncate {
        size: u64,
        mtime_ns: Option<u64>,
    },
    Remove,
    Stat,
}

pub(super) struct Request {
    pub(super) name: Arc<str>,
    pub(super) kind: ReqKind,
    pub(super) reply: Reply,
    pub(super) queued_at: Instant,
}

#[allow(
    clippy::large_enum_variant,
    reason = "nearly every message is Io: boxing it would cost an allocation a piece to save nothing"
)]
pub(super) enum Msg {
    Io(Request),
    Shutdown,
}
