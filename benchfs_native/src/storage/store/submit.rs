//! Data requests started without waiting, for a caller that must never
//! block (the daemon's event loop): one registered buffer each, handed to
//! the driver thread like any piece, and answered on a [`Completions`]
//! channel that the caller drains when it likes.
//!
//! Waking the caller: it sleeps in epoll on [`Completions::wake`] (the
//! protocol: [`ParkWake`]), which the driver thread writes after a result
//! only while the caller is parked, so a busy caller costs the driver
//! thread no system call per result. When the caller turns the ring
//! itself (a driven store) the answer is on the channel after its turn.
//!
//! A write's data either arrives already in a registered buffer the
//! caller took with [`ChunkStore::write_buf`] (and received into:
//! [`ChunkStore::start_write_fixed`], no copy at all), or travels with its
//! answer and is copied into the registered buffer by whoever turns the
//! ring: the driver thread, or, for a driven store, the caller itself. A
//! read ([`ChunkStore::start_read`]) answers with the registered buffer
//! itself, for the caller to send from and drop, or copies it into the
//! caller's vector ([`ReadAnswer`]).
//!
//! A request that would need more than one buffer, finds none free, or
//! would fail its checks is not started: its data comes back to the caller,
//! whose blocking call ([`ChunkStore::write`], [`ChunkStore::read_into`])
//! then does it and reports any error exactly as always.

use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Instant;

use super::ChunkStore;
use super::request::{Failure, Reply, ReqKind, Request, To, note_failure};
use super::{MAX_OFFSET, layout};
use crate::error::{Error, Result};
use crate::storage::buffer::FixedBuf;
use crate::sys::ParkWake;

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

    fn into_buf(self) -> Vec<u8> {
        self.buf
    }
}

impl ChunkStore {
    /// Starts writing `data` at `offset` of `path` without waiting, with
    /// `sync` also an fsync of the file before the answer; the result
    /// arrives on `to` with `tag`. `Err(data)`: not started (see the module
    /// docs), do it with [`ChunkStore::write`] (and [`ChunkStore::fsync`]).
    #[allow(clippy::too_many_arguments, reason = "one call, each argument named")]
    pub fn start_write(
        &self,
        path: &str,
        offset: u64,
        data: Vec<u8>,
        sync: bool,
        tag: u64,
        to: &Completions,
    ) -> std::result::Result<(), Vec<u8>> {
        let started = Instant::now();
        let Some((name, fixed)) = self.one_piece(path, offset, data.len()) else {
            return Err(data);
        };
        // The driver thread copies the data into `fixed` (`Answer::fill`).
        let direct = self.use_direct(offset, data.len(), fixed.addr());
        let want = data.len();
        let kind = ReqKind::Write {
            offset,
            buf: fixed,
            direct,
        };
        self.start(
            name,
            kind,
            want,
            answer(
                path,
                data,
                tag,
                Kind::Write {
                    sync,
                    in_fixed: false,
                },
                to,
                started,
            ),
        )
    }

    /// A free registered buffer for a write of `len` bytes at `offset` of
    /// `path` that [`ChunkStore::start_write_fixed`] would start, to
    /// receive its data into; `None`: the write does not fit one buffer,
    /// would fail its checks, or no buffer is free.
    pub fn write_buf(&self, path: &str, offset: u64, len: usize) -> Option<FixedBuf> {
        self.one_piece(path, offset, len).map(|(_, fixed)| fixed)
    }

    /// As [`ChunkStore::start_write`] for data already in `data`, a buffer
    /// from [`ChunkStore::write_buf`] (its length the bytes to write),
    /// written from there without a copy. `Err(data)`: not started, do it
    /// with [`ChunkStore::write`].
    pub fn start_write_fixed(
        &self,
        path: &str,
        offset: u64,
        data: FixedBuf,
        sync: bool,
        tag: u64,
        to: &Completions,
    ) -> std::result::Result<(), FixedBuf> {
        let started = Instant::now();
        let want = data.len();
        if !data.pool().same_pool(&self.pool) || !self.fits_one_piece(path, offset, want) {
            return Err(data);
        }
        let Ok(name) = layout::backing_name(path) else {
            return Err(data);
        };
        let name: Arc<str> = name.into();
        let direct = self.use_direct(offset, want, data.addr());
        let kind = ReqKind::Write {
            offset,
            buf: data,
            direct,
        };
        let kind_of = Kind::Write {
            sync,
            in_fixed: true,
        };
        let answer = answer(path, Vec::new(), tag, kind_of, to, started);
        let req = self.request(name, kind, want, answer);
        self.try_send(req).map_err(|mut req| {
            // Not answered: the answer goes without a word, the data back.
            drop(req.reply.to.take());
            let req = *req;
            match req.kind {
                ReqKind::Write { buf, .. } => buf,
                _ => unreachable!("built as a write above"),
            }
        })
    }

    /// Starts reading `len` bytes at `offset` of `path` without waiting;
    /// the result arrives on `to` with `tag`, its data as `answer_in` says
    /// (copied into `out`, whose capacity is reused, or in the registered
    /// buffer). `Err(out)`: not started (see the module docs), do it with
    /// [`ChunkStore::read_into`].
    #[allow(clippy::too_many_arguments, reason = "one call, each argument named")]
    pub fn start_read(
        &self,
        path: &str,
        offset: u64,
        len: usize,
        out: Vec<u8>,
        answer_in: ReadAnswer,
        tag: u64,
        to: &Completions,
    ) -> std::result::Result<(), Vec<u8>> {
        let started = Instant::now();
        let Some((name, fixed)) = self.one_piece(path, offset, len) else {
            return Err(out);
        };
        let direct = self.use_direct(offset, len, fixed.addr());
        let kind = ReqKind::Read {
            offset,
            buf: fixed,
            len,
            direct,
        };
        let kind_of = Kind::Read {
            in_fixed: answer_in == ReadAnswer::Registered,
        };
        self.start(
            name,
            kind,
            len,
            answer(path, out, tag, kind_of, to, started),
        )
    }

    /// The backing name and a free buffer for a request that fits one
    /// buffer inside one chunk and passes the blocking call's checks;
    /// `None` otherwise.
    fn one_piece(&self, path: &str, offset: u64, len: usize) -> Option<(Arc<str>, FixedBuf)> {
        if !self.fits_one_piece(path, offset, len) {
            return None;
        }
        let name: Arc<str> = layout::backing_name(path).ok()?.into();
        Some((name, self.pool.try_acquire()?))
    }

    /// Whether a request fits one buffer inside one chunk and passes the
    /// blocking call's checks.
    fn fits_one_piece(&self, path: &str, offset: u64, len: usize) -> bool {
        let in_chunk = (offset % self.chunk_size)
            .checked_add(len as u64)
            .is_some_and(|end| end <= self.chunk_size);
        let fits = len > 0 && len <= self.pool.buf_size() && in_chunk;
        fits && offset <= MAX_OFFSET - len as u64
            && self.check_open().is_ok()
            && layout::backing_name(path).is_ok()
    }

    fn request(&self, name: Arc<str>, kind: ReqKind, want: usize, answer: Answer) -> Request {
        Request {
            name,
            kind,
            reply: Reply {
                to: Some(To::Loop(answer)),
                index: 0,
                want,
                done_bytes: 0,
            },
            queued_at: Instant::now(),
        }
    }

    fn start(
        &self,
        name: Arc<str>,
        kind: ReqKind,
        want: usize,
        answer: Answer,
    ) -> std::result::Result<(), Vec<u8>> {
        let req = self.request(name, kind, want, answer);
        self.try_send(req)
            .map_err(|mut req| match req.reply.to.take() {
                Some(To::Loop(a)) => a.into_buf(),
                _ => Vec::new(),
            })
    }
}

enum Kind {
    Read { in_fixed: bool },
    Write { sync: bool, in_fixed: bool },
}

fn answer(
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
