//! Where a piece's result goes back: why it failed ([`Failure`]), and the
//! answer of a request started without waiting ([`Answer`]), which comes
//! back on a [`Completions`] channel as a [`Finished`].

use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::storage::buffer::FixedBuf;
use crate::sys::ParkWake;

/// Why a piece failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    Errno(i32),
    Closed,
}

/// Where a started read's data comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAnswer {
    /// Copied into the caller's vector ([`Finished::buf`]); the registered
    /// buffer returns to the pool.
    Copied,
    /// In the registered buffer it was read into ([`Finished::fixed`]), for
    /// the caller to send from and drop; the caller's vector comes back
    /// untouched.
    Registered,
}

/// A started request's result.
#[derive(Debug)]
pub struct Finished {
    /// The caller's tag of the request.
    pub tag: u64,
    /// Bytes written, or bytes read (shorter at the end of the file).
    pub result: Result<usize>,
    /// A write's data as given; a read's data (its length the bytes read),
    /// unless it is in `fixed`.
    pub buf: Vec<u8>,
    /// A read started with [`ReadAnswer::Registered`] that succeeded:
    /// the registered buffer holding the data (its length the bytes read).
    pub fixed: Option<FixedBuf>,
    /// From the start call to the driver thread's answer.
    pub storage_ns: u64,
}

/// Where started requests are answered.
#[derive(Debug)]
pub struct Completions {
    tx: Sender<Finished>,
    rx: Receiver<Finished>,
    wake: Arc<ParkWake>,
}

impl Completions {
    /// A channel and its eventfd.
    pub fn new() -> Result<Completions> {
        let (tx, rx) = mpsc::channel();
        let wake =
            ParkWake::new().map_err(|e| Error::from_io(&e, "eventfd", "store completions"))?;
        Ok(Completions {
            tx,
            rx,
            wake: Arc::new(wake),
        })
    }

    /// A finished request, if any.
    pub fn try_take(&self) -> Option<Finished> {
        self.rx.try_recv().ok()
    }

    /// The eventfd the caller sleeps on, written when a result arrives
    /// while parked.
    pub fn wake(&self) -> &ParkWake {
        &self.wake
    }
}

/// A started request's way back, carried in its piece's [`Reply`].
pub(super) struct Answer {
    tx: Sender<Finished>,
    wake: Arc<ParkWake>,
    tag: u64,
    buf: Vec<u8>,
    read: bool,
    /// A write whose data is in its registered buffer already, or a read
    /// answered with its registered buffer (no copy either way).
    in_fixed: bool,
    /// A write made durable (fsync) before it is answered.
    sync: bool,
    path: Arc<str>,
    started: Instant,
}

impl Answer {
    /// Whether the driver thread fsyncs the file after the write.
    pub(super) fn sync_after(&self) -> bool {
        self.sync
    }

    /// Sends the result (a read's data copied out of `fixed`, which then
    /// returns to the pool, or `fixed` itself) and wakes the caller if it
    /// sleeps.
    pub(super) fn finish(
        self,
        result: std::result::Result<u64, Failure>,
        mut fixed: Option<FixedBuf>,
        want: usize,
    ) {
        let Answer {
            tx,
            wake,
            tag,
            mut buf,
            read,
            in_fixed,
            path,
            started,
            ..
        } = self;
        let mut keep = None;
        let result = match result {
            Ok(n) => {
                let n = usize::try_from(n).unwrap_or(usize::MAX).min(want);
                if read
                    && in_fixed
                    && let Some(mut f) = fixed.take()
                {
                    // Bytes the kernel counted but did not place read as zeros.
                    let placed = f.len().min(n);
                    f.as_mut_full()[placed..n].fill(0);
                    f.set_len(n);
                    keep = Some(f);
                } else if read {
                    buf.clear();
                    if let Some(f) = &fixed {
                        buf.extend_from_slice(&f.as_slice()[..n.min(f.len())]);
                    }
                    // Bytes the kernel counted but did not place read as zeros.
                    buf.resize(n, 0);
                }
                Ok(n)
            }
            Err(f) => {
                let mut err = None;
                note_failure(&mut err, f, if read { "read" } else { "write" }, &path);
                Err(err.unwrap_or(Error::Closed))
            }
        };
        drop(fixed);
        let storage_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let sent = tx.send(Finished {
            tag,
            result,
            buf,
            fixed: keep,
            storage_ns,
        });
        if sent.is_ok() {
            wake.notify_if_parked();
        }
    }

    /// Copies a write's data into its registered buffer (unless it is
    /// there already).
    pub(super) fn fill(&self, fixed: &mut FixedBuf) {
        if !self.read && !self.in_fixed {
            fixed.fill_from(&self.buf);
        }
    }

    /// The caller's vector, of a request not started after all.
    pub(super) fn into_buf(self) -> Vec<u8> {
        self.buf
    }
}

/// What a started request is, for its answer.
pub(super) enum Kind {
    /// A read, answered in its registered buffer or not.
    Read { in_fixed: bool },
    /// A write, its data in its registered buffer already or not.
    Write { sync: bool, in_fixed: bool },
}

/// The answer of a request on `path` started at `started`, with the
/// caller's vector `buf`, to come back on `to` with `tag`.
pub(super) fn answer(
    path: &str,
    buf: Vec<u8>,
    tag: u64,
    kind: Kind,
    to: &Completions,
    started: Instant,
) -> Answer {
    Answer {
        tx: to.tx.clone(),
        wake: Arc::clone(&to.wake),
        tag,
        buf,
        read: matches!(kind, Kind::Read { .. }),
        in_fixed: matches!(
            kind,
            Kind::Read { in_fixed: true } | Kind::Write { in_fixed: true, .. }
        ),
        sync: matches!(kind, Kind::Write { sync: true, .. }),
        path: path.into(),
        started,
    }
}

pub(super) fn note_failure(slot: &mut Option<Error>, f: Failure, op: &'static str, path: &str) {
    if slot.is_none() {
        *slot = Some(match f {
            Failure::Errno(e) => Error::os(e, op, path),
            Failure::Closed => Error::Closed,
        });
    }
}
