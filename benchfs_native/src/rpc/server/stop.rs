//! The server's stop: why, whether forced (queued requests refused instead
//! of drained), and the drain's deadline.

use std::time::{Duration, Instant};

/// Why and how the server stops.
#[derive(Debug, Clone)]
struct Stop {
    reason: String,
    force: bool,
    deadline: Instant,
}

/// Whether the server stops, and how.
#[derive(Debug, Default)]
pub(super) struct Stopping(Option<Stop>);

impl Stopping {
    /// Starts stopping for `reason` (forced: without draining), with a
    /// drain of at most `drain`; `true` the first time. A stop already
    /// under way is only made forced.
    pub(super) fn begin(&mut self, reason: String, force: bool, drain: Duration) -> bool {
        match &mut self.0 {
            Some(s) => {
                s.force |= force;
                false
            }
            None => {
                self.0 = Some(Stop {
                    reason,
                    force,
                    deadline: crate::deadline::after(drain),
                });
                true
            }
        }
    }

    /// Whether stopping has begun.
    pub(super) fn is_stopping(&self) -> bool {
        self.0.is_some()
    }

    /// The drain deadline, once stopping.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.0.as_ref().map(|s| s.deadline)
    }

    /// Why it stopped (`error` when it never began: the loop failed).
    pub(super) fn reason(&self) -> String {
        self.0
            .as_ref()
            .map_or_else(|| "error".to_owned(), |s| s.reason.clone())
    }

    /// Whether the stop is forced.
    pub(super) fn forced(&self) -> bool {
        self.0.as_ref().is_some_and(|s| s.force)
    }
}
