//! Latency summaries: exact nearest-rank percentiles over all samples.

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

#[cfg(test)]
mod tests {
    use super::*;

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
