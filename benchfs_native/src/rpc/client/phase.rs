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

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::Client;
use super::buf::SharedBuf;
use super::inflight::{Answer, Call};
use super::pattern::Pattern;
use super::split::{ChunkPiece, Split, split};
use crate::error::{Error, Result};
use crate::latency::{LatencySummary, summarize};
use crate::membership::Record;
use crate::rpc::wire::Request;

/// How often the progress record is rewritten.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// What one rank does in one phase.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseSpec {
    /// Write (else read).
    pub write: bool,
    /// File name (file per process: the prefix).
    pub file_name: String,
    /// This rank.
    pub rank: u32,
    /// Ranks in the job.
    pub ranks: u32,
    /// Bytes per transfer.
    pub transfer_size: u64,
    /// Bytes per block (a multiple of `transfer_size`).
    pub block_size: u64,
    /// Segments.
    pub segments: u64,
    /// One file per rank (else one shared file).
    pub file_per_process: bool,
    /// Read what rank `(rank + shift) % ranks` wrote.
    pub read_rank_shift: u32,
    /// Check the data read against the pattern.
    pub verify: bool,
    /// Seed of the pattern (the same for the write and the read phase).
    pub seed: u64,
    /// Stop issuing transfers after this long (IOR's stonewall).
    pub stonewall: Option<Duration>,
    /// First transfer (to continue after a stonewall: IOR's wear-out).
    pub first_op: u64,
    /// Stop before this transfer (0: all).
    pub max_ops: u64,
    /// fsync before closing after a write (IOR `-e`).
    pub fsync: bool,
    /// Failed transfers tolerated before the phase fails.
    pub max_errors: u64,
    /// Rewrite `(bytes done u64 LE, transfers done u64 LE)` here about
    /// every 200 ms.
    pub progress_path: Option<PathBuf>,
}

impl Default for PhaseSpec {
    fn default() -> Self {
        PhaseSpec {
            write: true,
            file_name: "testfile".to_owned(),
            rank: 0,
            ranks: 1,
            transfer_size: 1 << 20,
            block_size: 1 << 20,
            segments: 1,
            file_per_process: true,
            read_rank_shift: 0,
            verify: false,
            seed: 0,
            stonewall: None,
            first_op: 0,
            max_ops: 0,
            fsync: false,
            max_errors: 0,
            progress_path: None,
        }
    }
}

/// What one phase did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PhaseResult {
    /// The file this rank used.
    pub path: String,
    /// Bytes moved by completed transfers.
    pub bytes: u64,
    /// Transfers completed.
    pub ops: u64,
    /// The transfer index reached (`first_op` + transfers issued).
    pub ops_reached: u64,
    /// Transfers of this rank in all.
    pub total_ops: u64,
    /// Wall clock (`CLOCK_REALTIME`, ns) before the open.
    pub start_unix_ns: u64,
    /// Wall clock after the close.
    pub end_unix_ns: u64,
    /// Seconds from before the open to after the close.
    pub elapsed_s: f64,
    /// Seconds in open.
    pub open_s: f64,
    /// Seconds from the first transfer issued to the last completed.
    pub io_s: f64,
    /// Seconds in fsync and close.
    pub close_s: f64,
    /// Per-transfer latency (issue of its first piece to completion of its
    /// last), in completion order.
    pub latency_ns: Vec<u64>,
    /// Their summary.
    pub latency: LatencySummary,
    /// Transfers that failed (at most `max_errors`).
    pub errors: u64,
    /// Transfers read whose data did not match the pattern.
    pub verify_errors: u64,
    /// File offset of the first wrong byte.
    pub first_bad_offset: Option<u64>,
    /// Whether the stonewall stopped the phase before its last transfer.
    pub stonewalled: bool,
    /// RPCs finished.
    pub rpcs: u64,
    /// RPC repetitions.
    pub retries: u64,
}

impl PhaseSpec {
    fn check(&self) -> Result<u64> {
        let bad = |name: &'static str, m: String| Err(Error::invalid(name, m));
        if self.ranks == 0 || self.rank >= self.ranks {
            return bad("rank", format!("{} is not in 0..{}", self.rank, self.ranks));
        }
        if self.transfer_size == 0 || self.transfer_size > super::ops::MAX_IO as u64 {
            return bad(
                "transfer_size",
                format!(
                    "{} is not in 1..={}",
                    self.transfer_size,
                    super::ops::MAX_IO
                ),
            );
        }
        if self.block_size == 0 || !self.block_size.is_multiple_of(self.transfer_size) {
            return bad(
                "block_size",
                format!(
                    "{} must be a positive multiple of transfer_size {}",
                    self.block_size, self.transfer_size
                ),
            );
        }
        if self.segments == 0 {
            return bad("segments", "must be at least 1".to_owned());
        }
        let per_block = self.block_size / self.transfer_size;
        let total = per_block.checked_mul(self.segments);
        let end = self
            .segments
            .checked_mul(u64::from(self.ranks))
            .and_then(|x| x.checked_mul(self.block_size));
        let (Some(total), Some(_)) = (total, end) else {
            return bad(
                "segments",
                "the file would be larger than 2^64 bytes".to_owned(),
            );
        };
        if self.first_op > total {
            return bad("first_op", format!("{} > {total} transfers", self.first_op));
        }
        if self.file_name.is_empty() {
            return bad("file_name", "is empty".to_owned());
        }
        Ok(total)
    }

    /// The rank whose data this rank writes or reads.
    pub fn data_rank(&self) -> u32 {
        if self.write {
            self.rank
        } else {
            ((u64::from(self.rank) + u64::from(self.read_rank_shift)) % u64::from(self.ranks))
                as u32
        }
    }

    /// The file this rank writes or reads.
    pub fn path(&self) -> String {
        if self.file_per_process {
            format!("{}.{:08}", self.file_name, self.data_rank())
        } else {
            self.file_name.clone()
        }
    }

    /// File offset of transfer `op`.
    pub fn offset(&self, op: u64) -> u64 {
        let per_block = self.block_size / self.transfer_size.max(1);
        let segment = op / per_block.max(1);
        let i = op % per_block.max(1);
        let block = if self.file_per_process {
            segment
        } else {
            segment * u64::from(self.ranks) + u64::from(self.data_rank())
        };
        block * self.block_size + i * self.transfer_size
    }
}

/// One issue step of the [`Scheduler`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Issue `piece` of the transfer in `slot` (`first`: its first piece).
    Issue {
        slot: usize,
        op: u64,
        piece: ChunkPiece,
        first: bool,
    },
    /// The window is full, or nothing is left to start: wait for a piece.
    Wait,
    /// Nothing outstanding and nothing left to start.
    Finished,
}

#[derive(Debug)]
struct Slot {
    op: u64,
    pieces: Split,
    count: usize,
    issued: usize,
    done: usize,
}

/// Which piece of which transfer goes next: at most `max` pieces
/// outstanding across transfers; a transfer's pieces are issued in order
/// before the next transfer starts.
#[derive(Debug)]
struct Scheduler {
    max: usize,
    outstanding: usize,
    slots: Vec<Option<Slot>>,
    current: Option<usize>,
    next_op: u64,
    end_op: u64,
    stopped: bool,
}

impl Scheduler {
    fn new(max: usize, first_op: u64, end_op: u64) -> Scheduler {
        let max = max.max(1);
        Scheduler {
            max,
            outstanding: 0,
            slots: (0..=max).map(|_| None).collect(),
            current: None,
            next_op: first_op,
            end_op,
            stopped: false,
        }
    }

    /// Stop starting transfers (those started are finished).
    fn stop(&mut self) {
        self.stopped = true;
    }

    fn step(&mut self, pieces_of: impl FnOnce(u64) -> Split) -> Step {
        if self.outstanding >= self.max {
            return Step::Wait;
        }
        if let Some(slot) = self.current {
            if let Some(s) = self.slots[slot].as_mut()
                && let Some(piece) = s.pieces.next()
            {
                s.issued += 1;
                if s.issued == s.count {
                    self.current = None;
                }
                self.outstanding += 1;
                return Step::Issue {
                    slot,
                    op: s.op,
                    piece,
                    first: false,
                };
            }
            self.current = None;
        }
        if self.stopped || self.next_op >= self.end_op {
            return if self.outstanding == 0 {
                Step::Finished
            } else {
                Step::Wait
            };
        }
        let Some(slot) = self.slots.iter().position(Option::is_none) else {
            return Step::Wait;
        };
        let op = self.next_op;
        let mut pieces = pieces_of(op);
        let count = pieces.clone().count();
        let Some(piece) = pieces.next() else {
            // An empty transfer cannot happen (transfer_size > 0).
            self.next_op += 1;
            return Step::Wait;
        };
        self.next_op += 1;
        self.outstanding += 1;
        self.slots[slot] = Some(Slot {
            op,
            pieces,
            count,
            issued: 1,
            done: 0,
        });
        if count > 1 {
            self.current = Some(slot);
        }
        Step::Issue {
            slot,
            op,
            piece,
            first: true,
        }
    }

    /// A piece of `slot` finished; returns the transfer when it is complete.
    fn piece_done(&mut self, slot: usize) -> Option<u64> {
        let s = self.slots.get_mut(slot)?.as_mut()?;
        s.done += 1;
        self.outstanding = self.outstanding.saturating_sub(1);
        if s.done == s.count {
            let op = s.op;
            self.slots[slot] = None;
            return Some(op);
        }
        None
    }

    /// Transfers issued so far (the next transfer index).
    fn reached(&self) -> u64 {
        self.next_op
    }
}

/// A transfer in flight.
struct Xfer {
    offset: u64,
    buf: SharedBuf,
    issued: Instant,
    moved: u64,
    error: Option<Error>,
}

/// The progress record file.
struct Progress {
    file: File,
    next: Instant,
}

impl Progress {
    fn open(path: &PathBuf) -> Result<Progress> {
        let file = File::create(path)
            .map_err(|e| Error::from_io(&e, "create progress file", path.display().to_string()))?;
        let p = Progress {
            file,
            next: Instant::now() + PROGRESS_EVERY,
        };
        p.write(0, 0);
        Ok(p)
    }

    fn write(&self, bytes: u64, ops: u64) {
        let mut rec = [0u8; 16];
        rec[..8].copy_from_slice(&bytes.to_le_bytes());
        rec[8..].copy_from_slice(&ops.to_le_bytes());
        // Progress is advisory: a failed write must not fail the phase.
        let _ = self.file.write_at(&rec, 0);
    }
}

impl Client {
    /// Runs one rank's phase (see [`PhaseSpec`]): open (creating for a
    /// write), the transfers, fsync if asked, close.
    pub fn run_phase(&mut self, spec: &PhaseSpec) -> Result<PhaseResult> {
        let total = spec.check()?;
        let path = spec.path();
        let counters0 = self.window.counters();
        let start_unix_ns = Record::now_unix_ns();
        let t0 = Instant::now();
        let flags = if spec.write {
            libc::O_CREAT | libc::O_WRONLY
        } else {
            libc::O_RDONLY
        };
        let handle = self.open(&path, flags, 0o644)?;
        let t_open = Instant::now();
        let mut result = PhaseResult {
            path: path.clone(),
            total_ops: total,
            start_unix_ns,
            ..PhaseResult::default()
        };
        if let Err(e) = self.phase_io(spec, &path, total, &mut result) {
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

    fn phase_io(
        &mut self,
        spec: &PhaseSpec,
        path: &str,
        total: u64,
        out: &mut PhaseResult,
    ) -> Result<()> {
        let ts = spec.transfer_size as usize;
        let chunk = self.conn.chunk_size;
        let end_op = if spec.max_ops > 0 {
            spec.max_ops.min(total)
        } else {
            total
        };
        let pattern =
            (spec.write || spec.verify).then(|| Pattern::new(spec.data_rank(), spec.seed));
        let progress = spec
            .progress_path
            .as_ref()
            .map(Progress::open)
            .transpose()?;
        let mut progress = progress;
        let start = self.placement.start_node(path);
        let mut sched = Scheduler::new(self.window.max_in_flight(), spec.first_op, end_op);
        let mut xfers: Vec<Option<Xfer>> =
            (0..=self.window.max_in_flight()).map(|_| None).collect();
        let mut pool: Vec<SharedBuf> = Vec::new();
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
                    let mut buf = pool.pop().unwrap_or_else(|| SharedBuf::zeroed(ts));
                    let offset = spec.offset(op);
                    if spec.write
                        && let (Some(p), Some(b)) = (&pattern, buf.bytes_mut())
                    {
                        p.fill(b, offset);
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
                let node = self.placement.chunk_owner_from(start, piece.chunk);
                let piece_buf = x.buf.piece(piece.buf_offset, piece.len);
                let call = if spec.write {
                    let req = Request::Write {
                        path,
                        chunk: piece.chunk,
                        offset: piece.chunk_offset,
                        len: piece.len as u64,
                        sync: false,
                    };
                    Call::new(&self.conn, node, &req, slot as u64)?.with_payload(piece_buf)
                } else {
                    let req = Request::Read {
                        path,
                        chunk: piece.chunk,
                        offset: piece.chunk_offset,
                        len: piece.len as u64,
                    };
                    Call::new(&self.conn, node, &req, slot as u64)?.with_dest(piece_buf)
                };
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
            let slot = o.tag as usize;
            let Some(x) = xfers.get_mut(slot).and_then(Option::as_mut) else {
                continue;
            };
            match o.result {
                Ok(Answer::Written(n) | Answer::Read(n)) => x.moved += n,
                Ok(a) => {
                    x.error.get_or_insert(Error::os(
                        libc::EBADMSG,
                        "phase",
                        format!("{path}: unexpected answer {a:?}"),
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
                        format!("{path} at offset {}: {} of {ts} bytes", x.offset, x.moved),
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
                pool.push(x.buf);
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
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn spec(fpp: bool) -> PhaseSpec {
        PhaseSpec {
            ranks: 4,
            rank: 1,
            transfer_size: 100,
            block_size: 300,
            segments: 2,
            file_per_process: fpp,
            ..PhaseSpec::default()
        }
    }

    #[test]
    fn ior_offsets() {
        let s = spec(true);
        assert_eq!(s.check().unwrap(), 6);
        assert_eq!(s.path(), "testfile.00000001");
        let offs: Vec<u64> = (0..6).map(|op| s.offset(op)).collect();
        assert_eq!(offs, [0, 100, 200, 300, 400, 500]);
        let s = spec(false);
        assert_eq!(s.path(), "testfile");
        let offs: Vec<u64> = (0..6).map(|op| s.offset(op)).collect();
        // Segment 0: block of rank 1 at 300; segment 1: (1 * 4 + 1) * 300.
        assert_eq!(offs, [300, 400, 500, 1500, 1600, 1700]);
        let mut r = spec(false);
        r.write = false;
        r.read_rank_shift = 3;
        assert_eq!(r.data_rank(), 0);
        assert_eq!(r.offset(0), 0);
        let mut r = spec(true);
        r.write = false;
        r.read_rank_shift = 1;
        assert_eq!(r.path(), "testfile.00000002");
    }

    #[test]
    fn bad_specs_name_the_argument() {
        let mut s = spec(true);
        s.block_size = 250;
        assert!(s.check().unwrap_err().to_string().contains("block_size"));
        let mut s = spec(true);
        s.rank = 4;
        assert!(s.check().unwrap_err().to_string().contains("rank"));
        let mut s = spec(true);
        s.first_op = 7;
        assert!(s.check().unwrap_err().to_string().contains("first_op"));
        let mut s = spec(true);
        s.segments = u64::MAX;
        assert!(s.check().is_err());
    }

    /// Drives the scheduler with completions in a pseudo-random order and
    /// checks the window accounting.
    fn simulate(max: usize, ts: usize, chunk: u64, ops: u64, seed: u64, stop_at: Option<u64>) {
        let mut s = Scheduler::new(max, 0, ops);
        let mut outstanding: Vec<(usize, u64, ChunkPiece)> = Vec::new();
        let mut issued: Vec<Vec<ChunkPiece>> = vec![Vec::new(); ops as usize];
        let mut completed = vec![false; ops as usize];
        let mut x = seed | 1;
        loop {
            loop {
                if stop_at.is_some_and(|n| s.reached() >= n) {
                    s.stop();
                }
                match s.step(|op| split(op * ts as u64, ts, chunk)) {
                    Step::Issue {
                        slot,
                        op,
                        piece,
                        first,
                    } => {
                        assert_eq!(first, issued[op as usize].is_empty());
                        issued[op as usize].push(piece);
                        outstanding.push((slot, op, piece));
                        assert!(outstanding.len() <= max, "window exceeded");
                    }
                    Step::Wait => break,
                    Step::Finished => {
                        assert!(outstanding.is_empty());
                        let reached = s.reached();
                        for op in 0..ops {
                            let whole = split(op * ts as u64, ts, chunk).collect::<Vec<_>>();
                            if op < reached {
                                assert_eq!(issued[op as usize], whole, "op {op}");
                                assert!(completed[op as usize], "op {op} never completed");
                            } else {
                                assert!(issued[op as usize].is_empty());
                            }
                        }
                        if let Some(n) = stop_at {
                            assert!(reached >= n.min(ops) && reached <= ops);
                        } else {
                            assert_eq!(reached, ops);
                        }
                        return;
                    }
                }
            }
            assert!(!outstanding.is_empty(), "waiting with nothing outstanding");
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (slot, op, _) = outstanding.swap_remove((x as usize) % outstanding.len());
            if let Some(done) = s.piece_done(slot) {
                assert_eq!(done, op);
                assert!(!completed[op as usize]);
                completed[op as usize] = true;
                assert!(outstanding.iter().all(|&(_, o, _)| o != op));
            }
        }
    }

    #[test]
    fn window_accounting() {
        for (max, ts, chunk) in [
            (1, 10, 4),
            (4, 10, 4),
            (16, 3000, 1024),
            (3, 5, 100),
            (2, 64, 64),
        ] {
            for seed in 1..20 {
                simulate(max, ts, chunk, 25, seed, None);
                simulate(max, ts, chunk, 25, seed, Some(7));
            }
        }
    }
}
