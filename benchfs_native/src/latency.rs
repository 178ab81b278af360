//! Latency summaries: the one summary type ([`LatencySummary`]), computed
//! exactly over all samples ([`summarize`], the RPC client's phases and
//! ping benchmarks) or from a constant-memory [`Histogram`] (the storage
//! benchmark's unbounded runs). Both use nearest-rank percentiles.

/// Summary of latency samples in nanoseconds (all 0 when there are none).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LatencySummary {
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min_ns: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest.
    pub max_ns: u64,
}

/// The sample at quantile `q` (0..=1) of `sorted` (ascending): the
/// nearest-rank definition, the smallest sample with at least `q` of all
/// samples at or below it. 0 when empty.
pub fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let n = sorted.len();
    let rank = (q.clamp(0.0, 1.0) * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

/// Summary of `samples` (any order).
pub fn summarize(samples: &[u64]) -> LatencySummary {
    if samples.is_empty() {
        return LatencySummary::default();
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let sum: u128 = sorted.iter().map(|&v| u128::from(v)).sum();
    LatencySummary {
        count: sorted.len() as u64,
        min_ns: sorted[0],
        mean_ns: sum as f64 / sorted.len() as f64,
        p50_ns: percentile(&sorted, 0.50),
        p90_ns: percentile(&sorted, 0.90),
        p99_ns: percentile(&sorted, 0.99),
        p999_ns: percentile(&sorted, 0.999),
        max_ns: sorted[sorted.len() - 1],
    }
}

/// Log-linear latency histogram: exact below 256 ns, else 128 buckets per
/// power of two (under 0.8% error), constant memory for any run length.
#[derive(Debug, Clone)]
pub struct Histogram {
    buckets: Vec<u64>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
const BUCKETS: usize = (2 * SUB + 56 * SUB) as usize;

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: vec![0; BUCKETS],
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

impl Histogram {
    fn bucket(v: u64) -> usize {
        if v < 2 * SUB {
            return v as usize;
        }
        let e = 63 - v.leading_zeros();
        let shift = e - SUB_BITS;
        let m = v >> shift;
        (2 * SUB + u64::from(shift - 1) * SUB + (m - SUB)) as usize
    }

    /// Middle of bucket `i`.
    fn value(i: usize) -> u64 {
        let i = i as u64;
        if i < 2 * SUB {
            return i;
        }
        let k = i - 2 * SUB;
        let shift = k / SUB + 1;
        let m = k % SUB + SUB;
        (m << shift) + ((1u64 << shift) >> 1)
    }

    /// Adds one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        let b = Self::bucket(v);
        if let Some(c) = self.buckets.get_mut(b) {
            *c += 1;
        }
        self.count += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// The value at quantile `q` (0..=1).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::value(i).min(self.max);
            }
        }
        self.max
    }

    /// The summary (all 0 when empty).
    pub fn stats(&self) -> LatencySummary {
        if self.count == 0 {
            return LatencySummary::default();
        }
        LatencySummary {
            count: self.count,
            min_ns: self.min,
            mean_ns: if self.count == 0 {
                0.0
            } else {
                self.sum as f64 / self.count as f64
            },
            p50_ns: self.quantile(0.50),
            p90_ns: self.quantile(0.90),
            p99_ns: self.quantile(0.99),
            p999_ns: self.quantile(0.999),
            max_ns: self.max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_contiguous_and_close() {
        let mut prev = 0;
        for v in [
            0u64,
            1,
            255,
            256,
            257,
            511,
            512,
            1000,
            4095,
            4096,
            1 << 40,
            u64::MAX,
        ] {
            let b = Histogram::bucket(v);
            assert!(b >= prev && b < BUCKETS, "{v} -> {b}");
            prev = b;
            let mid = Histogram::value(b);
            let err = (mid as f64 - v as f64).abs() / (v.max(1) as f64);
            assert!(err <= 1.0 / 128.0, "{v}: {mid}");
        }
        assert_eq!(Histogram::bucket(256), 256);
        assert_eq!(Histogram::bucket(511), 383);
        assert_eq!(Histogram::bucket(512), 384);
    }

    #[test]
    fn quantiles() {
        let mut h = Histogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let s = h.stats();
        assert_eq!(s.count, 1000);
        assert_eq!(s.max_ns, 1_000_000);
        assert!(
            (s.p50_ns as f64 - 500_000.0).abs() < 500_000.0 / 100.0,
            "{s:?}"
        );
        assert!(
            (s.p99_ns as f64 - 990_000.0).abs() < 990_000.0 / 100.0,
            "{s:?}"
        );
        assert!((s.mean_ns - 500_500.0).abs() < 1.0);
    }

    #[test]
    fn nearest_rank() {
        let v: Vec<u64> = (1..=1000).collect();
        let s = summarize(&v);
        assert_eq!((s.count, s.min_ns, s.max_ns), (1000, 1, 1000));
        assert_eq!(
            (s.p50_ns, s.p90_ns, s.p99_ns, s.p999_ns),
            (500, 900, 990, 999)
        );
        assert!((s.mean_ns - 500.5).abs() < 1e-9);
        assert_eq!(percentile(&[7], 0.999), 7);
        assert_eq!(percentile(&[], 0.5), 0);
        assert_eq!(percentile(&[1, 2], 0.0), 1);
        assert_eq!(percentile(&[1, 2], 1.0), 2);
    }

    #[test]
    fn order_does_not_matter_and_outliers_show_in_the_tail() {
        let mut v = vec![100u64; 10_000];
        v[1234] = 5_000_000;
        v[77] = 4_000_000;
        let s = summarize(&v);
        assert_eq!(s.p50_ns, 100);
        assert_eq!(s.p999_ns, 100);
        assert_eq!(s.max_ns, 5_000_000);
        let mut r = v.clone();
        r.reverse();
        assert_eq!(summarize(&r), s);
        assert_eq!(summarize(&[]), LatencySummary::default());
    }
}
