//! The driver: it owns the ring and the fd cache, turns requests into
//! kernel operations and answers each on its reply channel. It runs on a
//! thread of its own ([`RingThread::run`]) or is turned by the thread that
//! opened a driven store ([`RingThread::turn`]).

use std::ffi::CString;
use std::os::fd::{AsFd as _, OwnedFd};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Instant;

use super::answer::Failure;
use super::request::{Msg, Reply, ReqKind, Request};
use crate::storage::driver::{Completion, Driver};
use crate::storage::fd_cache::{Access, FdCache, Mode, Opened};
use crate::storage::ops::{Fsync, Ftruncate, Op, Read, Statx, Unlink, Write};
use crate::storage::stats::{Counters, bump};
use crate::sys;
use crate::sys::ParkWake;

/// The driver thread's state.
pub(super) struct RingThread {
    pub(super) driver: Driver<Reply>,
    pub(super) fds: FdCache,
    pub(super) root_fd: Arc<OwnedFd>,
    pub(super) counters: Arc<Counters>,
    pub(super) wake: Arc<ParkWake>,
    pub(super) rx: Receiver<Msg>,
    pub(super) done: Vec<Completion<Reply>>,
}

impl RingThread {
    pub(super) fn run(mut self) {
        let mut shutdown = false;
        loop {
            // Everything that piled up while we were busy goes into one batch.
            shutdown |= self.take_requests().1;
            if shutdown && self.driver.in_flight() == 0 {
                break;
            }
            // Park: from here on callers write the eventfd, which the ring
            // polls (`Driver::set_wake_fd`); drained only when that fired.
            self.wake.park();
            if !shutdown {
                match self.rx.try_recv() {
                    Ok(msg) => {
                        self.wake.awake();
                        match msg {
                            Msg::Io(req) => self.handle(req),
                            Msg::Shutdown => shutdown = true,
                        }
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => {
                        // No caller can wake us any more: re-check whether
                        // anything is left before waiting.
                        self.wake.awake();
                        shutdown = true;
                        continue;
                    }
                    Err(TryRecvError::Empty) => {}
                }
            }
            let res = self.driver.submit_and_wait(1);
            self.wake.awake();
            if self.driver.take_woken() {
                self.wake.drain();
            }
            self.complete_ready();
            if res.is_err() {
                // The ring is unusable: stop taking requests. Dropping the
                // driver waits for what is in the kernel; the replies of
                // everything else are dropped, which answers `Closed`.
                break;
            }
        }
        self.driver.flush_trace();
    }

    /// Handles every request waiting in the channel: whether there was
    /// any, and whether the store is closing.
    fn take_requests(&mut self) -> (bool, bool) {
        let mut any = false;
        loop {
            match self.rx.try_recv() {
                Ok(Msg::Io(req)) => {
                    any = true;
                    self.handle(req);
                }
                Ok(Msg::Shutdown) | Err(TryRecvError::Disconnected) => return (any, true),
                Err(TryRecvError::Empty) => return (any, false),
            }
        }
    }

    /// One turn on the thread that drives the ring itself (a store opened
    /// with [`ChunkStore::open_driven`](super::ChunkStore::open_driven)):
    /// takes requests, submits, answers what completed; never waits.
    /// Whether anything happened; `Err` when the ring is unusable.
    pub(super) fn turn(&mut self) -> std::io::Result<bool> {
        let (mut any, _) = self.take_requests();
        if self.driver.in_flight() == 0 {
            // Nothing queued or in the kernel: no clock, no counters.
            return Ok(any);
        }
        any |= self.driver.poll()? > 0;
        any |= self.complete_ready() > 0;
        Ok(any)
    }

    /// [`RingThread::turn`], then, when nothing happened, waits for a
    /// completion: for a blocking call made on the driving thread.
    pub(super) fn turn_waiting(&mut self) -> std::io::Result<()> {
        if self.turn()? {
            return Ok(());
        }
        if self.driver.in_flight() == 0 {
            return Ok(());
        }
        self.driver.submit_and_wait(1)?;
        self.complete_ready();
        Ok(())
    }

    /// Operations accepted and not yet answered.
    pub(super) fn in_flight(&self) -> usize {
        self.driver.in_flight()
    }

    /// Takes one request straight from the driving thread, no channel.
    pub(super) fn take(&mut self, req: Request) {
        self.handle(req);
    }

    /// Writes the buffered trace records out (before the ring is dropped).
    pub(super) fn flush_trace(&mut self) {
        self.driver.flush_trace();
    }

    fn complete_ready(&mut self) -> usize {
        let mut done = std::mem::take(&mut self.done);
        let n = self.driver.reap(&mut done);
        for c in done.drain(..) {
            self.complete(c);
        }
        self.done = done;
        n
    }

    fn open(&mut self, name: &Arc<str>, mode: Mode, create: bool) -> std::io::Result<Opened> {
        let o = self.fds.get(name, mode, create)?;
        if o.hit {
            bump(&self.counters.fd_cache_hits, 1);
        } else {
            bump(&self.counters.fd_cache_misses, 1);
        }
        Ok(o)
    }

    fn handle(&mut self, req: Request) {
        let Request {
            name,
            kind,
            mut reply,
            queued_at,
        } = req;
        let errno = |e: &std::io::Error| Failure::Errno(e.raw_os_error().unwrap_or(libc::EIO));
        let op = match kind {
            ReqKind::Write {
                offset,
                mut buf,
                direct,
            } => {
                reply.fill(&mut buf);
                let mode = Mode {
                    access: Access::ReadWrite,
                    direct,
                };
                match self.open(&name, mode, true) {
                    Ok(o) => Op::Write(Write {
                        fd: o.fd,
                        offset,
                        len: buf.len(),
                        buf,
                        buf_offset: 0,
                        direct: o.direct,
                    }),
                    Err(e) => return reply.send(Err(errno(&e)), Some(buf)),
                }
            }
            ReqKind::Read {
                offset,
                buf,
                len,
                direct,
            } => {
                let mode = Mode {
                    access: Access::Read,
                    direct,
                };
                match self.open(&name, mode, false) {
                    Ok(o) => Op::Read(Read {
                        fd: o.fd,
                        offset,
                        buf,
                        len,
                        direct: o.direct,
                    }),
                    Err(e) => return reply.send(Err(errno(&e)), Some(buf)),
                }
            }
            ReqKind::Fsync => {
                let fd = match self.fds.any(&name) {
                    Some(fd) => fd,
                    None => {
                        let mode = Mode {
                            access: Access::Read,
                            direct: false,
                        };
                        match self.open(&name, mode, false) {
                            Ok(o) => o.fd,
                            Err(e) => return reply.send(Err(errno(&e)), None),
                        }
                    }
                };
                Op::Fsync(Fsync { fd })
            }
            ReqKind::Truncate { size, mtime_ns } => {
                let mode = Mode {
                    access: Access::ReadWrite,
                    direct: false,
                };
                let fd = match self.open(&name, mode, false) {
                    Ok(o) => o.fd,
                    Err(e) => return reply.send(Err(errno(&e)), None),
                };
                if !self.driver.supports_ftruncate() {
                    let r = sys::ftruncate(fd.as_fd(), size)
                        .and_then(|()| stamp(&fd, mtime_ns))
                        .map(|()| 0)
                        .map_err(|e| errno(&e));
                    return reply.send(r, None);
                }
                reply.mtime_after = mtime_ns;
                Op::Ftruncate(Ftruncate { fd, len: size })
            }
            ReqKind::Remove => {
                self.fds.evict_file(&name);
                let Ok(cname) = CString::new(name.as_bytes()) else {
                    return reply.send(Err(Failure::Errno(libc::EINVAL)), None);
                };
                Op::Unlink(Unlink {
                    dirfd: Arc::clone(&self.root_fd),
                    name: cname,
                })
            }
            ReqKind::Stat => {
                let Ok(cname) = CString::new(name.as_bytes()) else {
                    return reply.send(Err(Failure::Errno(libc::EINVAL)), None);
                };
                Op::Statx(Statx::new(Arc::clone(&self.root_fd), cname))
            }
        };
        self.driver.push(op, reply, queued_at);
    }

    fn complete(&mut self, c: Completion<Reply>) {
        let Completion {
            token: mut reply,
            op,
            result,
            ..
        } = c;
        let failed = (result < 0).then_some(Failure::Errno(-result));
        match op {
            Op::Write(mut w) => {
                let n = if failed.is_some() { 0 } else { result as usize };
                reply.done_bytes += n as u64;
                // The rest of a short write failed (ENOSPC), or made no
                // progress: the bytes before it are the answer, as
                // write(2) gives them; an error only when there are none.
                let stopped = failed.is_some() || (n == 0 && w.len > 0);
                if stopped && reply.done_bytes == 0 {
                    // No progress and no error: an I/O error rather than a spin.
                    let f = failed.unwrap_or(Failure::Errno(libc::EIO));
                    return reply.send(Err(f), Some(w.buf));
                }
                if n < w.len && !stopped {
                    // Short write: the rest goes out as a new operation.
                    w.offset += n as u64;
                    w.buf_offset += n;
                    w.len -= n;
                    self.driver.push(Op::Write(w), reply, Instant::now());
                    return;
                }
                if reply.sync_after() {
                    // Durable before the answer: the fsync follows on the
                    // same descriptor; the data buffer is free already.
                    drop(w.buf);
                    self.driver
                        .push(Op::Fsync(Fsync { fd: w.fd }), reply, Instant::now());
                    return;
                }
                let total = reply.done_bytes;
                reply.send(Ok(total), Some(w.buf));
            }
            Op::Read(r) => match failed {
                Some(f) => reply.send(Err(f), Some(r.buf)),
                None => reply.send(Ok(result as u64), Some(r.buf)),
            },
            Op::Statx(s) => match failed {
                Some(f) => reply.send(Err(f), None),
                None if s.is_link() => reply.send(Err(Failure::Errno(libc::ELOOP)), None),
                None => reply.send(Ok(s.size()), None),
            },
            Op::Ftruncate(t) => {
                let stamped = match failed {
                    Some(f) => Err(f),
                    None => stamp(&t.fd, reply.mtime_after.take())
                        .map_err(|e| Failure::Errno(e.raw_os_error().unwrap_or(libc::EIO))),
                };
                reply.send(stamped.map(|()| 0), None);
            }
            Op::Fsync(_) | Op::Unlink(_) => match failed {
                Some(f) => reply.send(Err(f), None),
                // An fsync after a write answers with the bytes written.
                None => {
                    let total = reply.done_bytes;
                    reply.send(Ok(total), None);
                }
            },
        }
    }
}

/// Sets the modification time of truncated file `fd` to `mtime_ns`, if
/// given, on the descriptor that truncated it.
fn stamp(fd: &OwnedFd, mtime_ns: Option<u64>) -> std::io::Result<()> {
    match mtime_ns {
        Some(ns) => sys::set_times(fd.as_fd(), None, Some(ns)),
        None => Ok(()),
    }
}
