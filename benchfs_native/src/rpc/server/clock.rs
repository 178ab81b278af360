//! The wall clock, as the wire and the namespace count it.

use std::time::{SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch now (0 before it, saturating far
/// after it).
pub(super) fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
