//! One rank's phase as IOR describes it, and what it measured.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::latency::LatencySummary;
use crate::rpc::client::ops::MAX_IO;

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
    /// Checks the description; returns the transfers of this rank in all.
    pub fn check(&self) -> Result<u64> {
        let bad = |name: &'static str, m: String| Err(Error::invalid(name, m));
        if self.ranks == 0 || self.rank >= self.ranks {
            return bad("rank", format!("{} is not in 0..{}", self.rank, self.ranks));
        }
        if self.transfer_size == 0 || self.transfer_size > MAX_IO as u64 {
            return bad(
                "transfer_size",
                format!("{} is not in 1..={}", self.transfer_size, MAX_IO),
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

    /// The transfer after the last one a call moves, of `total` (what
    /// [`check`](Self::check) returned): `max_ops` caps it.
    pub fn end_op(&self, total: u64) -> u64 {
        if self.max_ops > 0 {
            self.max_ops.min(total)
        } else {
            total
        }
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
}
