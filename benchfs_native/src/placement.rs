//! Placement: which node owns a file's metadata and each of its chunks.
//!
//! Every node and every client computes the same answer from the path alone,
//! with no shared state, so the function is fixed and documented byte for
//! byte in docs/PLACEMENT.md:
//!
//! ```text
//! h        = fmix64(fnv1a64(path bytes))          // well-mixed 64-bit hash
//! start    = (h * N) >> 64                        // Lemire's multiply-shift, u128 product
//! meta(p)  = start
//! chunk(p, k) = (start + k mod N) mod N
//! ```
//!
//! The chunks of one file walk round robin over all nodes from a start that
//! the hash picks, so a shared file is spread perfectly, a file of `M`
//! chunks puts `floor(M/N)` or `ceil(M/N)` chunks on every node, and only the
//! remainders (and single-chunk files) are left to the hash's randomness.
//! The metadata owner is the owner of chunk 0, so a small file is served by
//! one node.
//!
//! The path is hashed as given: callers pass the canonical relative path
//! (the one [`crate::storage::layout::validate`] accepts).

use crate::error::{Error, Result};

/// FNV-1a 64-bit offset basis.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64-bit prime.
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Largest node count accepted: the node id must fit the wire's `u32` and
/// stay far from overflow in the `u128` reduction.
pub const MAX_NODES: u32 = 1 << 20;

/// FNV-1a over `bytes` (64-bit).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// MurmurHash3's 64-bit finalizer: every input bit flips each output bit
/// with probability close to 1/2.
pub fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// The placement hash of `path`: `fmix64(fnv1a64(path))`.
pub fn path_hash(path: &str) -> u64 {
    fmix64(fnv1a64(path.as_bytes()))
}

/// Maps a 64-bit hash uniformly onto `0..n` (Lemire's multiply-shift: the
/// high word of the 128-bit product; bias at most `n / 2^64`).
pub fn reduce(hash: u64, n: u32) -> u32 {
    // The high word of a u64 times a u32 is below the u32, so the cast is exact.
    ((u128::from(hash) * u128::from(n)) >> 64) as u32
}

/// Placement over a fixed number of nodes, numbered `0..nodes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    nodes: u32,
}

impl Placement {
    /// Placement on `nodes` nodes (1 to [`MAX_NODES`]).
    pub fn new(nodes: u32) -> Result<Self> {
        if nodes == 0 || nodes > MAX_NODES {
            return Err(Error::invalid(
                "nodes",
                format!("must be between 1 and {MAX_NODES}, got {nodes}"),
            ));
        }
        Ok(Placement { nodes })
    }

    /// The number of nodes.
    pub fn nodes(&self) -> u32 {
        self.nodes
    }

    /// The node where `path`'s chunk 0 lives and where its walk starts.
    pub fn start_node(&self, path: &str) -> u32 {
        reduce(path_hash(path), self.nodes)
    }

    /// The node that owns `path`'s metadata (the owner of chunk 0).
    pub fn metadata_owner(&self, path: &str) -> u32 {
        self.start_node(path)
    }

    /// The node where chunk 0 of the file with id `file_id` lives (its
    /// data is placed by id, so a rename moves no data).
    pub fn data_start(&self, file_id: u64) -> u32 {
        reduce(fmix64(file_id), self.nodes)
    }

    /// The node that owns chunk `chunk_index` of `path`.
    pub fn chunk_owner(&self, path: &str, chunk_index: u64) -> u32 {
        self.chunk_owner_from(self.start_node(path), chunk_index)
    }

    /// [`Placement::chunk_owner`] for a file whose [`Placement::start_node`]
    /// is already known (saves rehashing the path for every chunk).
    pub fn chunk_owner_from(&self, start: u32, chunk_index: u64) -> u32 {
        let n = u64::from(self.nodes);
        let owner = (u64::from(start) % n + chunk_index % n) % n;
        // `owner < n <= MAX_NODES`, so it fits.
        owner as u32
    }
}

/// Balance of a load vector (one count per node).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadStats {
    /// Number of nodes.
    pub nodes: usize,
    /// Sum over all nodes.
    pub total: u64,
    /// Smallest per-node load.
    pub min: u64,
    /// Largest per-node load.
    pub max: u64,
    /// Mean per-node load.
    pub mean: f64,
    /// `max / mean` (1.0 is perfect; 0.0 for an empty load).
    pub max_over_mean: f64,
    /// Coefficient of variation: population standard deviation / mean.
    pub cv: f64,
}

/// Balance figures of `counts` (per-node loads).
pub fn load_stats(counts: &[u64]) -> LoadStats {
    let nodes = counts.len();
    let total: u64 = counts.iter().sum();
    let min = counts.iter().copied().min().unwrap_or(0);
    let max = counts.iter().copied().max().unwrap_or(0);
    let mean = if nodes == 0 {
        0.0
    } else {
        total as f64 / nodes as f64
    };
    let (max_over_mean, cv) = if mean > 0.0 {
        let var = counts
            .iter()
            .map(|&c| {
                let d = c as f64 - mean;
                d * d
            })
            .sum::<f64>()
            / nodes as f64;
        (max as f64 / mean, var.sqrt() / mean)
    } else {
        (0.0, 0.0)
    };
    LoadStats {
        nodes,
        total,
        min,
        max,
        mean,
        max_over_mean,
        cv,
    }
}

impl Placement {
    /// Per-node chunk counts of `files`, each given as `(path, chunks)`:
    /// chunks `0..chunks` of every file (for benchmarks and tests).
    pub fn chunk_loads<'a, I>(&self, files: I) -> Vec<u64>
    where
        I: IntoIterator<Item = (&'a str, u64)>,
    {
        let n = u64::from(self.nodes);
        let mut counts = vec![0u64; self.nodes as usize];
        for (path, chunks) in files {
            let start = u64::from(self.start_node(path));
            let (full, rest) = (chunks / n, chunks % n);
            for (i, c) in counts.iter_mut().enumerate() {
                // Node i is hit by chunk k when (start + k) mod n == i; the
                // first `rest` positions after `start` get one more.
                let pos = (i as u64 + n - start) % n;
                *c += full + u64::from(pos < rest);
            }
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_are_stable() {
        // FNV-1a reference vectors.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(fmix64(0), 0);
        // Pinned (docs/PLACEMENT.md): every build on every node must agree.
        assert_eq!(path_hash(""), 0xefd0_1f60_ba99_2926);
        assert_eq!(path_hash("testfile.0"), 0xa978_b793_5bff_4db6);
        assert_eq!(path_hash("a/b/c"), 0x32c6_68a9_14de_94c6);
        let p = Placement::new(16).unwrap();
        let got: Vec<u32> = (0..8)
            .map(|i| p.metadata_owner(&format!("testfile.{i}")))
            .collect();
        assert_eq!(got, [10, 0, 15, 7, 12, 2, 12, 11]);
        assert_eq!(p.chunk_owner("testfile.0", 7), 1);
    }

    #[test]
    fn node_count_is_checked() {
        assert!(Placement::new(0).is_err());
        assert!(Placement::new(MAX_NODES + 1).is_err());
        assert!(Placement::new(1).is_ok());
        assert!(Placement::new(MAX_NODES).is_ok());
    }

    #[test]
    fn chunk_walk_is_round_robin() {
        let p = Placement { nodes: 7 };
        let s = p.start_node("shared");
        for k in 0..100u64 {
            assert_eq!(p.chunk_owner("shared", k), (s + (k % 7) as u32) % 7);
        }
        assert_eq!(
            p.chunk_owner("shared", u64::MAX),
            p.chunk_owner_from(s, u64::MAX)
        );
        assert_eq!(p.metadata_owner("shared"), p.chunk_owner("shared", 0));
    }

    #[test]
    fn chunk_loads_matches_per_chunk_count() {
        let p = Placement { nodes: 5 };
        let files: Vec<(String, u64)> = (0..30).map(|i| (format!("f{i}"), i * 3 + 1)).collect();
        let mut slow = vec![0u64; 5];
        for (f, m) in &files {
            for k in 0..*m {
                slow[p.chunk_owner(f, k) as usize] += 1;
            }
        }
        let fast = p.chunk_loads(files.iter().map(|(f, m)| (f.as_str(), *m)));
        assert_eq!(slow, fast);
    }

    #[test]
    fn load_stats_figures() {
        let s = load_stats(&[10, 10, 10, 10]);
        assert_eq!((s.total, s.min, s.max), (40, 10, 10));
        assert!((s.max_over_mean - 1.0).abs() < 1e-12 && s.cv.abs() < 1e-12);
        let s = load_stats(&[0, 20]);
        assert!((s.max_over_mean - 2.0).abs() < 1e-12 && (s.cv - 1.0).abs() < 1e-12);
        let s = load_stats(&[]);
        assert_eq!(s.max_over_mean, 0.0);
    }
}
