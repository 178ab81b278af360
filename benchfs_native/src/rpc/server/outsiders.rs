//! How often datagrams from outside the job go into the event log: a
//! stream of them (the point of sending them) must not fill it, so their
//! count since the last record is written at most every [`TRACE_EVERY`],
//! and what is left at the end of the run.

use std::time::{Duration, Instant};

/// Shortest time between two `foreign_signal` records of one daemon.
pub const TRACE_EVERY: Duration = Duration::from_millis(100);

/// Datagrams from outside the job not yet in the event log.
#[derive(Debug, Default)]
pub(super) struct Outsiders {
    pending: u64,
    last: Option<Instant>,
}

impl Outsiders {
    /// `n` more arrived: the count to record now, if one is due.
    pub(super) fn arrived(&mut self, n: u64) -> Option<u64> {
        self.pending += n;
        let now = Instant::now();
        if self.pending == 0 || self.last.is_some_and(|t| now < t + TRACE_EVERY) {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.pending))
    }

    /// What is left to record at the end of the run.
    pub(super) fn rest(&mut self) -> Option<u64> {
        Some(std::mem::take(&mut self.pending)).filter(|&n| n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_recorded_as_counts_at_most_every_interval() {
        let mut o = Outsiders::default();
        assert_eq!(o.arrived(3), Some(3));
        // Within the interval: kept for later, nothing lost.
        assert_eq!(o.arrived(5), None);
        assert_eq!(o.arrived(2), None);
        assert_eq!(o.rest(), Some(7));
        assert_eq!(o.rest(), None);
        assert_eq!(o.arrived(0), None);
    }
}
