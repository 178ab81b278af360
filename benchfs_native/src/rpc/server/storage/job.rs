//! What crosses between the event loop and the storage threads: a
//! request's [`Job`] (the decoded request, its path owned, and its data
//! buffer) and its [`Outcome`] (the reply to send, or a [`Failure`] with
//! the text of its error reply).

use std::io;

use crate::error::{Error, strerror};
use crate::rpc::wire::{OwnedRequest, Reply, RequestOf};
use crate::storage::buffer::FixedBuf;
use crate::sys;

/// One request for a pool thread.
#[derive(Debug)]
pub struct Job {
    /// The event loop's handle of the request.
    pub token: u32,
    /// What to do.
    pub request: OwnedRequest,
    /// Write: the data; symlink, link: a link's target. Read, readdir and
    /// readlink: filled with the reply payload.
    pub buf: Vec<u8>,
    /// A write's data received straight into one of the store's registered
    /// buffers (then `buf` is an idle pool vector); only the ring takes it.
    pub fixed: Option<FixedBuf>,
}

impl Job {
    /// Moves data received into a registered buffer into `buf`, for a
    /// write that goes to the pool after all.
    pub fn unfix(&mut self) {
        if let Some(f) = self.fixed.take() {
            self.buf.clear();
            self.buf.extend_from_slice(f.as_slice());
        }
    }
}

/// A failed result: the errno and the error reply's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Positive errno.
    pub errno: i32,
    /// E.g. `read testfile.3 chunk 7: No such file or directory`.
    pub message: String,
}

/// The result of a [`Job`], back to the event loop.
#[derive(Debug)]
pub struct Outcome {
    /// The job's token.
    pub token: u32,
    /// The reply to send (its payload, if any, in `buf` or `fixed`), or
    /// the failure.
    pub result: Result<Reply<'static>, Failure>,
    /// The job's buffer (read data or readdir entries on success).
    pub buf: Vec<u8>,
    /// A read's data in one of the store's registered buffers (then `buf`
    /// is an idle pool vector), sent from there.
    pub fixed: Option<FixedBuf>,
    /// Time spent in the store.
    pub storage_ns: u64,
}

/// The errno an engine error stands for.
pub fn errno_of(e: &Error) -> i32 {
    e.posix_errno()
}

/// What a request is about, for its error reply: `read testfile.3 chunk 7`.
fn what(request: &OwnedRequest) -> String {
    let path = request.path();
    match request {
        RequestOf::Write { chunk, .. } | RequestOf::Read { chunk, .. } => {
            format!("{} {path} chunk {chunk}", request.op())
        }
        RequestOf::Readdir { .. } if path.is_empty() => "readdir /".to_owned(),
        _ => format!("{} {path}", request.op()),
    }
}

pub(super) fn fail(request: &OwnedRequest, errno: i32, detail: &str) -> Failure {
    let message = if detail.is_empty() {
        format!("{}: {}", what(request), strerror(errno))
    } else {
        format!("{}: {} ({detail})", what(request), strerror(errno))
    };
    Failure { errno, message }
}

pub(super) fn engine_fail(request: &OwnedRequest, e: &Error) -> Failure {
    let errno = errno_of(e);
    match e {
        Error::Os { .. } => fail(request, errno, link_detail(errno)),
        other => fail(request, errno, &other.to_string()),
    }
}

pub(super) fn io_fail(request: &OwnedRequest, e: &io::Error) -> Failure {
    let errno = e.raw_os_error().unwrap_or(libc::EIO);
    fail(request, errno, link_detail(errno))
}

/// The words for a file refused because it is a symbolic link (or would
/// resolve outside the data directory).
fn link_detail(errno: i32) -> &'static str {
    if sys::is_link_refusal(errno) {
        "a symbolic link in the data directory is never followed"
    } else {
        ""
    }
}
