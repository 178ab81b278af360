//! Deadlines from durations that come from input: `Instant + Duration`
//! panics on overflow, so every deadline built from a caller's value goes
//! through [`after`], which saturates at a point far in the future.

use std::time::{Duration, Instant};

/// About 31 years: what a deadline too far to represent becomes.
const FAR: Duration = Duration::from_secs(1 << 30);

/// `now + d`, or a deadline as far as the clock can represent.
pub fn after_from(now: Instant, d: Duration) -> Instant {
    now.checked_add(d)
        .or_else(|| now.checked_add(FAR))
        .unwrap_or(now)
}

/// `Instant::now() + d` without overflow.
pub fn after(d: Duration) -> Instant {
    after_from(Instant::now(), d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_durations_do_not_panic() {
        let now = Instant::now();
        assert!(after_from(now, Duration::MAX) > now);
        assert!(after_from(now, Duration::from_secs_f64(1e19)) > now);
        assert_eq!(
            after_from(now, Duration::from_secs(2)),
            now + Duration::from_secs(2)
        );
    }
}
