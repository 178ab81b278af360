//! Freshness of signed connects: a connect whose time is more than
//! [`WINDOW`] from the daemon's clock is refused, and so is a nonce seen
//! before, so a connect sniffed on the host and sent again opens nothing.
//! Nonces are kept for twice the window (an older one fails the time check
//! anyway) and at most [`MAX_NONCES`] at once.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::rpc::session::NONCE_LEN;

/// How far a connect's time may be from the daemon's clock.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Most nonces remembered; past it connects are refused until old ones
/// expire (a flood of valid connects, which only key holders can make).
pub const MAX_NONCES: usize = 1 << 16;

/// Why a signed connect is not fresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stale {
    /// Its time is outside the window.
    Time,
    /// Its nonce was seen before.
    Replayed,
    /// Too many connects in the window.
    Full,
}

/// The nonces of recent connects.
#[derive(Debug, Default)]
pub struct NonceCache {
    seen: HashMap<[u8; NONCE_LEN], Instant>,
}

impl NonceCache {
    /// Checks a connect sent at `sent_unix_ns` (the daemon's clock reads
    /// `now_unix_ns`, `now`) with `nonce`, and remembers the nonce.
    pub fn admit(
        &mut self,
        sent_unix_ns: u64,
        now_unix_ns: u64,
        nonce: [u8; NONCE_LEN],
        now: Instant,
    ) -> Result<(), Stale> {
        let window_ns = u64::try_from(WINDOW.as_nanos()).unwrap_or(u64::MAX);
        if sent_unix_ns.abs_diff(now_unix_ns) > window_ns {
            return Err(Stale::Time);
        }
        if self.seen.contains_key(&nonce) {
            return Err(Stale::Replayed);
        }
        if self.seen.len() >= MAX_NONCES {
            let keep = WINDOW.saturating_mul(2);
            self.seen
                .retain(|_, at| now.saturating_duration_since(*at) < keep);
            if self.seen.len() >= MAX_NONCES {
                return Err(Stale::Full);
            }
        }
        self.seen.insert(nonce, now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_future_and_replayed_connects_are_refused() {
        let mut c = NonceCache::default();
        let now = Instant::now();
        let t = 1_700_000_000_000_000_000u64;
        let min = 60_000_000_000u64;
        assert_eq!(c.admit(t, t, [1; NONCE_LEN], now), Ok(()));
        assert_eq!(c.admit(t, t, [1; NONCE_LEN], now), Err(Stale::Replayed));
        assert_eq!(
            c.admit(t - 2 * min, t, [2; NONCE_LEN], now),
            Err(Stale::Time)
        );
        assert_eq!(
            c.admit(t + 2 * min, t, [3; NONCE_LEN], now),
            Err(Stale::Time)
        );
        assert_eq!(c.admit(t + min / 2, t, [4; NONCE_LEN], now), Ok(()));
        assert_eq!(c.admit(u64::MAX, 0, [5; NONCE_LEN], now), Err(Stale::Time));
    }
}
