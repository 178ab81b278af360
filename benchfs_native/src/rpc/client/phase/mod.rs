//! The IOR-style bulk phase: one rank's write or read of its transfers,
//! run entirely in Rust with a window of `max_in_flight` RPCs across
//! transfers.
//!
//! Layout as IOR's: `segments` segments of one `block_size` block per rank,
//! each block `block_size / transfer_size` transfers. File per process: the
//! file `"{file_name}.{rank:08}"`, offset `segment * block_size + i *
//! transfer_size`; shared file `file_name`, offset `(segment * ranks + r) *
//! block_size + i * transfer_size`. A read phase with `read_rank_shift`
//! reads what rank `(rank + shift) % ranks` wrote (IOR `-C`).
//!
//! * `spec`: what one rank does ([`PhaseSpec`]) and what it measured
//!   ([`PhaseResult`]).
//! * `scheduler`: which piece of which transfer goes next.

mod scheduler;
mod spec;

use std::time::Instant;

use self::scheduler::{Scheduler, Step};
pub use self::spec::{PhaseResult, PhaseSpec};
use super::buf::SharedBuf;
use super::inflight::{Answer, Call};
use super::pattern::Pattern;
use super::progress::{PROGRESS_EVERY, Progress};
use super::split::{ChunkPiece, split};
use super::{Client, OpenFile};
use crate::error::{Error, Result};
use crate::latency::summarize;
use crate::membership::Record;
use crate::rpc::wire::Request;

/// Transfers from this size on take long enough (a millisecond or more
/// at 1 MiB) that a wake-up when the reply comes is small beside them.
const LARGE_TRANSFER: u64 = 128 << 10;

/// Empty progress calls a wait spins through while a phase moves large
/// transfers. Spinning through a whole transfer (the client's default
/// 20,000) takes a core from the daemons that serve it when they share
/// the cores; sleeping after 200 (the mount's workers) was slower still
/// for the native client (docs/PERFORMANCE.md, queue depth 1). Small
/// transfers keep the full spin, where a wake-up would be most of the
/// latency.
const LARGE_TRANSFER_SPIN: u32 = 2_000;

/// A call's tag: the transfer's slot above these bits, the piece's offset
/// in the transfer below them (a transfer is at most [`super::MAX_IO`]).
const PIECE_BITS: u32 = 32;

fn slot_of(tag: u64) -> usize {
    usize::try_from(tag >> PIECE_BITS).unwrap_or(usize::MAX)
}

fn piece_of(tag: u64) -> usize {
    usize::try_from(tag & ((1 << PIECE_BITS) - 1)).unwrap_or(usize::MAX)
}

/// What is left of the write of a transfer at `offset` (`len` bytes) that
/// was sent from its byte `at` to the chunk's end and answered `n` bytes:
/// None when it wrote them all, or none (then it answered an error).
fn rest_of_short_write(
    offset: u64,
    len: usize,
    chunk: u64,
    at: usize,
    n: u64,
) -> Option<ChunkPiece> {
    let piece = split(offset + at as u64, len.checked_sub(at)?, chunk).next()?;
    let done = usize::try_from(n)
        .ok()
        .filter(|&d| d > 0 && d < piece.len)?;
    Some(ChunkPiece {
        chunk: piece.chunk,
        chunk_offset: piece.chunk_offset + n,
        buf_offset: at + done,
        len: piece.len - done,
    })
}

/// A transfer in flight.
struct Xfer {
    offset: u64,
    buf: SharedBuf,
    issued: Instant,
    moved: u64,
    error: Option<Error>,
}

/// How many transfer buffers a call needs up front: as many transfers as
/// the window holds at once, one huge-page set rather than one each.
fn in_flight(spec: &PhaseSpec, total: u64, window: usize) -> usize {
    usize::try_from(spec.end_op(total).saturating_sub(spec.first_op))
        .unwrap_or(usize::MAX)
        .min(window)
}

impl Client {
    /// Runs one rank's phase (see [`PhaseSpec`]): open (creating for a
    /// write), the transfers, fsync if asked, close.
    pub fn run_phase(&mut self, spec: &PhaseSpec) -> Result<PhaseResult> {
        let total = spec.check()?;
        let path = spec.path();
        let counters0 = self.window.counters();
        // The buffers before the clock, as IOR and fio make theirs.
        let buffers = SharedBuf::transfer_set(
            in_flight(spec, total, self.window.max_in_flight()),
            spec.transfer_size as usize,
        );
        let start_unix_ns = Record::now_unix_ns();
        let t0 = Instant::now();
        let flags = if spec.write {
            libc::O_CREAT | libc::O_WRONLY
        } else {
            libc::O_RDONLY
        };
        // Before any directory above it is made.
        crate::rpc::client::ops::check_path("phase", &path, false)?;
        if spec.write
            && let Some((dir, _)) = path.rsplit_once('/')
        {
            self.mkdir_all(dir, 0o755)?;
        }
        let handle = self.open(&path, flags, 0o644)?;
        let file = self.file(handle, "phase")?;
        if spec.write
            && let Err(e) = self.tell_data(file.ino, &path)
        {
            self.files.remove(&handle);
            return Err(e);
        }
        let t_open = Instant::now();
        let mut result = PhaseResult {
            path: path.clone(),
            total_ops: total,
            start_unix_ns,
            ..PhaseResult::default()
        };
        let spin = self.wait_spin();
        if spec.transfer_size >= LARGE_TRANSFER {
            self.set_wait_spin(LARGE_TRANSFER_SPIN.min(spin));
        }
        let io = self.phase_io(spec, &file, total, buffers, &mut result);
        self.set_wait_spin(spin);
        if let Err(e) = io {
            self.window.abandon();
            self.files.remove(&handle);
            return Err(e);
        }
        let t_io = Instant::now();
        let closed = if spec.write && spec.fsync {
            self.fsync(handle).and_then(|()| self.close(handle))
        } else {
            self.close(handle)
        };
        self.files.remove(&handle);
        closed?;
        let t_end = Instant::now();
        let c = self.window.counters();
        result.end_unix_ns = Record::now_unix_ns();
        result.elapsed_s = (t_end - t0).as_secs_f64();
        result.open_s = (t_open - t0).as_secs_f64();
        result.close_s = (t_end - t_io).as_secs_f64();
        result.latency = summarize(&result.latency_ns);
        result.rpcs = c.rpcs - counters0.rpcs;
        result.retries = c.retries - counters0.retries;
        self.window.flush_trace();
        Ok(result)
    }

    /// The call that moves `piece` of the transfer in `slot`: its tag
    /// says which transfer and which piece ([`slot_of`], [`piece_of`]).
    fn piece_call(
        &self,
        write: bool,
        file: &OpenFile,
        slot: usize,
        piece: ChunkPiece,
        buf: &mut SharedBuf,
    ) -> Result<Call> {
        let (path, node) = (
            &*file.data,
            self.placement.chunk_owner_from(file.start, piece.chunk),
        );
        let tag = ((slot as u64) << PIECE_BITS) | piece.buf_offset as u64;
        let piece_buf = buf.piece(piece.buf_offset, piece.len);
        Ok(if write {
            let req = Request::Write {
                path,
                chunk: piece.chunk,
                offset: piece.chunk_offset,
                len: piece.len as u64,
                sync: false,
            };
            Call::named(&self.conn, node, &req, tag, &file.path)?.with_payload(piece_buf)
        } else {
            let req = Request::Read {
                path,
                chunk: piece.chunk,
                offset: piece.chunk_offset,
                len: piece.len as u64,
            };
            Call::named(&self.conn, node, &req, tag, &file.path)?.with_dest(piece_buf)
        })
    }

    fn phase_io(
        &mut self,
        spec: &PhaseSpec,
        file: &OpenFile,
        total: u64,
        buffers: Vec<SharedBuf>,
        out: &mut PhaseResult,
    ) -> Result<()> {
        let ts = spec.transfer_size as usize;
        let chunk = self.conn.chunk_size;
        let end_op = spec.end_op(total);
        let pattern =
            (spec.write || spec.verify).then(|| Pattern::new(spec.data_rank(), spec.seed));
        let progress = spec
            .progress_path
            .as_ref()
            .map(Progress::open)
            .transpose()?;
        let mut progress = progress;
        let mut sched = Scheduler::new(self.window.max_in_flight(), spec.first_op, end_op);
        let mut xfers: Vec<Option<Xfer>> =
            (0..=self.window.max_in_flight()).map(|_| None).collect();
        // Each with where it holds the pattern of, for a write's next fill.
        let mut pool: Vec<(SharedBuf, Option<u64>)> =
            buffers.into_iter().map(|b| (b, None)).collect();
        let t_start = Instant::now();
        let stonewall_at = spec.stonewall.filter(|d| !d.is_zero()).map(|d| t_start + d);
        let mut last_done = t_start;
        out.latency_ns.reserve(
            usize::try_from(end_op - spec.first_op)
                .unwrap_or(0)
                .min(1 << 24),
        );
        loop {
            // Fill the window.
            loop {
                if !sched.stopped && stonewall_at.is_some_and(|t| Instant::now() >= t) {
                    sched.stop();
                }
                let step = sched.step(|op| split(spec.offset(op), ts, chunk));
                let Step::Issue {
                    slot,
                    op,
                    piece,
                    first,
                } = step
                else {
                    break;
                };
                if first {
                    let (mut buf, filled_at) =
                        pool.pop().unwrap_or_else(|| (SharedBuf::zeroed(ts), None));
                    let offset = spec.offset(op);
                    if spec.write
                        && let (Some(p), Some(b)) = (&pattern, buf.bytes_mut())
                    {
                        p.refill(b, offset, filled_at);
                    }
                    xfers[slot] = Some(Xfer {
                        offset,
                        buf,
                        issued: Instant::now(),
                        moved: 0,
                        error: None,
                    });
                }
                let Some(x) = xfers[slot].as_mut() else {
                    return Err(Error::os(libc::EIO, "phase", "transfer slot is empty"));
                };
                let call = self.piece_call(spec.write, file, slot, piece, &mut x.buf)?;
                self.window.submit(&self.conn, call);
            }
            if self.window.is_idle() {
                break;
            }
            let until = progress.as_ref().map(|p| p.next);
            let outcome = self.window.next(&self.conn, until)?;
            if let Some(p) = progress.as_mut()
                && Instant::now() >= p.next
            {
                p.write(out.bytes, out.ops);
                p.next = Instant::now() + PROGRESS_EVERY;
            }
            let Some(o) = outcome else { continue };
            let slot = slot_of(o.tag);
            let Some(x) = xfers.get_mut(slot).and_then(Option::as_mut) else {
                continue;
            };
            match o.result {
                Ok(Answer::Written(n)) => {
                    x.moved += n;
                    // A short write (the daemon's disk filled part way): the
                    // rest goes again, as write(2)'s callers do, so that the
                    // error it meets (ENOSPC, EDQUOT) is the one reported.
                    if let Some(rest) = rest_of_short_write(x.offset, ts, chunk, piece_of(o.tag), n)
                    {
                        let call = self.piece_call(true, file, slot, rest, &mut x.buf)?;
                        self.window.submit(&self.conn, call);
                        sched.reissue(slot);
                    }
                }
                Ok(Answer::Read(n)) => x.moved += n,
                Ok(a) => {
                    x.error.get_or_insert(Error::os(
                        libc::EBADMSG,
                        "phase",
                        format!("{}: unexpected answer {a:?}", file.path),
                    ));
                }
                Err(e) => {
                    x.error.get_or_insert(e);
                }
            }
            if sched.piece_done(slot).is_none() {
                continue;
            }
            let Some(x) = xfers[slot].take() else {
                continue;
            };
            let now = Instant::now();
            last_done = now;
            let failed = x.error.or_else(|| {
                (x.moved < ts as u64).then(|| {
                    Error::os(
                        libc::EIO,
                        if spec.write { "write" } else { "read" },
                        format!(
                            "{} at offset {}: {} of {ts} bytes",
                            file.path, x.offset, x.moved
                        ),
                    )
                })
            });
            if let Some(e) = failed {
                out.errors += 1;
                if out.errors > spec.max_errors {
                    return Err(e);
                }
            } else {
                out.ops += 1;
                out.bytes += ts as u64;
                out.latency_ns.push(
                    u64::try_from(now.saturating_duration_since(x.issued).as_nanos())
                        .unwrap_or(u64::MAX),
                );
                if !spec.write
                    && spec.verify
                    && let (Some(p), Some(b)) = (&pattern, x.buf.bytes())
                    && let Some(bad) = p.check(b, x.offset)
                {
                    out.verify_errors += 1;
                    out.first_bad_offset = Some(out.first_bad_offset.map_or(bad, |f| f.min(bad)));
                }
            }
            if x.buf.is_exclusive() {
                pool.push((x.buf, spec.write.then_some(x.offset)));
            }
        }
        out.ops_reached = sched.reached();
        out.stonewalled = sched.stopped && sched.reached() < end_op;
        out.io_s = last_done.saturating_duration_since(t_start).as_secs_f64();
        if let Some(p) = &progress {
            p.write(out.bytes, out.ops);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rest_of_a_short_write_starts_where_it_stopped_and_ends_at_the_chunk() {
        // A 1 MiB transfer at 3 MiB over 256 KiB chunks; its second piece
        // (bytes 256k..512k) wrote 48 KiB.
        let (k, mib) = (1024u64, 1usize << 20);
        let rest = rest_of_short_write(3 << 20, mib, 256 * k, 256 << 10, 48 * k);
        assert_eq!(
            rest,
            Some(ChunkPiece {
                chunk: 13,
                chunk_offset: 48 * k,
                buf_offset: (256 + 48) << 10,
                len: (256 - 48) << 10,
            })
        );
        // The rest of that rest wrote 16 KiB more: what is left after it.
        let again = rest_of_short_write(3 << 20, mib, 256 * k, (256 + 48) << 10, 16 * k);
        assert_eq!(
            again.map(|p| (p.chunk_offset, p.len)),
            Some((64 * k, 192 << 10))
        );
    }

    #[test]
    fn a_whole_or_empty_answer_leaves_no_rest() {
        assert_eq!(rest_of_short_write(0, 65536, 1 << 20, 0, 65536), None);
        assert_eq!(rest_of_short_write(0, 65536, 1 << 20, 0, 0), None);
        assert_eq!(rest_of_short_write(0, 65536, 1 << 20, 70000, 10), None);
    }

    #[test]
    fn a_tag_holds_the_slot_and_the_piece() {
        let tag = (7u64 << PIECE_BITS) | 123_456;
        assert_eq!((slot_of(tag), piece_of(tag)), (7, 123_456));
    }
}
