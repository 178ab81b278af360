//! Data requests started without waiting, for a caller that must never
//! block (the daemon's event loop): one registered buffer each, handed to
//! the driver thread like any piece, and answered on a [`Completions`]
//! channel that the caller drains when it likes.
//!
//! Waking the caller: it sleeps in epoll on [`Completions::wake`] (the
//! protocol: [`ParkWake`](crate::sys::ParkWake)), which the driver thread writes after a result
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
use std::time::Instant;

use super::ChunkStore;
use super::answer::{Answer, Completions, Kind, ReadAnswer, answer};
use super::request::{Reply, ReqKind, Request, To};
use super::{MAX_OFFSET, layout};
use crate::storage::buffer::FixedBuf;

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
                mtime_after: None,
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
