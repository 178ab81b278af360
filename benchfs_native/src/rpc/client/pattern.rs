//! The data pattern of the bulk phase: cheap to generate and to check, and
//! telling a wrong offset, a wrong rank and torn data apart from good data.
//!
//! The file is seen as 4 KiB blocks (by file offset). Every block is a
//! fixed pseudo-random template of the writer rank (and a run seed), whose
//! first 16 bytes are replaced by a stamp: the block's file offset inverted
//! (u64 LE)
//! and `"BFSP"` with the rank (u64 LE). Data from another offset carries
//! another stamp (or, when shifted by less than a block, a shifted
//! template); data of another rank another template and stamp; zeros or
//! stale bytes match neither.

use crate::placement::fmix64;

/// Block size of the pattern.
pub const BLOCK: usize = 4096;
const STAMP: usize = 16;
const MAGIC: u64 = 0x4246_5350; // "BFSP"

/// The pattern of one writer rank.
#[derive(Clone)]
pub struct Pattern {
    rank: u32,
    template: Box<[u8; BLOCK]>,
}

impl std::fmt::Debug for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pattern(rank {})", self.rank)
    }
}

impl Pattern {
    /// The pattern written by `rank` in a run with `seed`.
    pub fn new(rank: u32, seed: u64) -> Pattern {
        let mut template = Box::new([0u8; BLOCK]);
        let base = fmix64(seed ^ (u64::from(rank) << 32 | MAGIC));
        for (i, word) in template.chunks_exact_mut(8).enumerate() {
            let v = fmix64(
                base.wrapping_add(i as u64)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15),
            );
            word.copy_from_slice(&v.to_le_bytes());
        }
        Pattern { rank, template }
    }

    /// The writer rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    fn stamp(&self, block_offset: u64) -> [u8; STAMP] {
        let mut s = [0u8; STAMP];
        // Inverted, so that zeros never match a stamp.
        s[..8].copy_from_slice(&(!block_offset).to_le_bytes());
        s[8..].copy_from_slice(&(MAGIC << 32 | u64::from(self.rank)).to_le_bytes());
        s
    }

    /// Calls `f(block_offset, in_block, buf_range)` for each block part of
    /// `len` bytes at file offset `offset`.
    fn blocks(offset: u64, len: usize, mut f: impl FnMut(u64, usize, std::ops::Range<usize>)) {
        let mut done = 0usize;
        while done < len {
            let at = offset + done as u64;
            let in_block = (at % BLOCK as u64) as usize;
            let n = (BLOCK - in_block).min(len - done);
            f(at - in_block as u64, in_block, done..done + n);
            done += n;
        }
    }

    /// Fills `buf` with the pattern of file bytes `offset..offset + len`.
    pub fn fill(&self, buf: &mut [u8], offset: u64) {
        Self::blocks(offset, buf.len(), |block, in_block, range| {
            let dst = &mut buf[range];
            dst.copy_from_slice(&self.template[in_block..in_block + dst.len()]);
            if in_block < STAMP {
                let stamp = self.stamp(block);
                let n = (STAMP - in_block).min(dst.len());
                dst[..n].copy_from_slice(&stamp[in_block..in_block + n]);
            }
        });
    }

    /// [`Self::fill`] of a buffer that holds this pattern of file bytes
    /// from `filled_at` (`None`: anything else). When both offsets lie at
    /// the same place in their blocks, the templates line up and only the
    /// stamps differ: 16 bytes of every 4 KiB are written instead of a
    /// pass over the whole buffer (a write's load generator then costs what
    /// IOR's, which fills its buffer once).
    pub fn refill(&self, buf: &mut [u8], offset: u64, filled_at: Option<u64>) {
        let aligned_alike = |prev: u64| prev % BLOCK as u64 == offset % BLOCK as u64;
        if !filled_at.is_some_and(aligned_alike) {
            return self.fill(buf, offset);
        }
        Self::blocks(offset, buf.len(), |block, in_block, range| {
            if in_block < STAMP {
                let stamp = self.stamp(block);
                let n = (STAMP - in_block).min(range.len());
                buf[range.start..range.start + n].copy_from_slice(&stamp[in_block..in_block + n]);
            }
        });
    }

    /// The file offset of the first byte of `buf` (file bytes from `offset`)
    /// that differs from the pattern, if any.
    pub fn check(&self, buf: &[u8], offset: u64) -> Option<u64> {
        let mut bad: Option<u64> = None;
        Self::blocks(offset, buf.len(), |block, in_block, range| {
            if bad.is_some() {
                return;
            }
            let start = range.start;
            let got = &buf[range];
            let mut want_stamp = [0u8; STAMP];
            let head = if in_block < STAMP {
                want_stamp = self.stamp(block);
                (STAMP - in_block).min(got.len())
            } else {
                0
            };
            let first = got[..head]
                .iter()
                .zip(&want_stamp[in_block.min(STAMP)..])
                .position(|(a, b)| a != b)
                .or_else(|| {
                    let t = &self.template[in_block + head..in_block + got.len()];
                    if got[head..] == *t {
                        None
                    } else {
                        got[head..]
                            .iter()
                            .zip(t)
                            .position(|(a, b)| a != b)
                            .map(|i| i + head)
                    }
                });
            if let Some(i) = first {
                bad = Some(offset + (start + i) as u64);
            }
        });
        bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(p: &Pattern, offset: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        p.fill(&mut v, offset);
        v
    }

    #[test]
    fn a_refill_is_the_fill_of_the_new_offset() {
        let p = Pattern::new(2, 9);
        for (first, next, len) in [
            (0u64, 1 << 20, 1 << 20),
            (4096, 0, 3 * 4096),
            (5, 8197, 10_000),
            (5, 8196, 10_000),
            (4090, 4090 + 7 * 4096, 20),
            (4090, 3, 20),
        ] {
            let mut buf = filled(&p, first, len);
            p.refill(&mut buf, next, Some(first));
            assert_eq!(
                buf,
                filled(&p, next, len),
                "{first} then {next}, {len} bytes"
            );
            let mut other = vec![7u8; len];
            p.refill(&mut other, next, None);
            assert_eq!(other, filled(&p, next, len));
        }
    }

    #[test]
    fn good_data_checks_at_any_alignment() {
        let p = Pattern::new(3, 42);
        for (off, len) in [
            (0u64, 4096usize),
            (1, 1),
            (5, 20_000),
            (4090, 12),
            (1 << 30, 100),
        ] {
            let v = filled(&p, off, len);
            assert_eq!(p.check(&v, off), None, "{off} {len}");
            // Any sub-range is the same pattern.
            if len > 3 {
                assert_eq!(p.check(&v[1..len - 1], off + 1), None);
            }
        }
    }

    #[test]
    fn wrong_offset_is_detected() {
        let p = Pattern::new(1, 0);
        let v = filled(&p, 8192, 4096);
        // A whole block off: only the stamp differs.
        // 8192 = 0x2000 and 4096 = 0x1000 differ in their second byte.
        assert_eq!(p.check(&v, 4096), Some(4097));
        assert_eq!(p.check(&v, 1 << 20), Some((1 << 20) + 1));
        // Shifted inside a block: the template differs.
        assert!(p.check(&v, 8192 + 8).is_some());
        let w = filled(&p, 100, 10_000);
        assert!(p.check(&w, 101).is_some());
    }

    #[test]
    fn wrong_rank_or_seed_is_detected() {
        let a = Pattern::new(0, 7);
        let b = Pattern::new(1, 7);
        let v = filled(&b, 0, 8192);
        assert_eq!(a.check(&v, 0), Some(8));
        // Without a stamp in range the template still differs.
        assert!(a.check(&v[100..200], 100).is_some());
        assert!(Pattern::new(1, 8).check(&v, 0).is_some());
    }

    #[test]
    fn torn_and_zero_data_are_detected_at_the_first_bad_byte() {
        let p = Pattern::new(2, 1);
        let mut v = filled(&p, 4096, 3 * 4096);
        assert_eq!(p.check(&[0u8; 64], 0), Some(0));
        v[5000..].fill(0);
        assert_eq!(p.check(&v, 4096), Some(4096 + 5000));
        let mut v = filled(&p, 0, 4096);
        v[4095] ^= 1;
        assert_eq!(p.check(&v, 0), Some(4095));
        let mut v = filled(&p, 0, 4096);
        v[9] ^= 0x80;
        assert_eq!(p.check(&v, 0), Some(9));
    }
}
