//! When an RPC is tried again: idempotent operations only, transient
//! errors only, with exponential backoff.

use std::time::Duration;

use crate::rpc::wire::Op;

/// First backoff.
const BACKOFF_BASE: Duration = Duration::from_millis(20);
/// Longest backoff.
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// Whether repeating `op` cannot change the outcome (read, stat, open,
/// readdir, ping, stats, check_parent, statfs, readlink; a check_parent's
/// stamp of its directory's times repeats harmlessly, and its count of a
/// subdirectory, repeated after a lost reply, is off by one in an nlink
/// only, which a failed mkdir would cost more). Creates, writes,
/// truncates, unlinks, fsyncs, shutdowns and every namespace change (mkdir,
/// rmdir, link, setattr, symlink, link_count) are never repeated.
pub fn idempotent(op: Op) -> bool {
    matches!(
        op,
        Op::Read
            | Op::Stat
            | Op::Open
            | Op::Readdir
            | Op::Ping
            | Op::Stats
            | Op::CheckParent
            | Op::Statfs
            | Op::Readlink
    )
}

/// What a failure is, for the retry decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transience {
    /// Never repeat.
    Permanent,
    /// Repeat after a backoff (`EAGAIN`, `EBUSY`).
    Transient,
    /// Repeat only if the daemon is still reachable (`ETIMEDOUT`).
    IfReachable,
}

/// Classifies a failure by its errno.
pub fn transience(errno: i32) -> Transience {
    match errno {
        libc::EAGAIN | libc::EBUSY => Transience::Transient,
        libc::ETIMEDOUT => Transience::IfReachable,
        _ => Transience::Permanent,
    }
}

/// Backoff before retry number `attempt` (1, 2, ...): 20 ms doubling up to
/// 2 s, plus up to a quarter of it from `jitter` so that clients that
/// failed together do not retry in lockstep.
pub fn backoff(attempt: u16, jitter: u64) -> Duration {
    let shift = u32::from(attempt.saturating_sub(1)).min(16);
    let base = BACKOFF_BASE.saturating_mul(1u32 << shift).min(BACKOFF_MAX);
    let quarter = base.as_nanos() as u64 / 4;
    let extra = if quarter == 0 { 0 } else { jitter % quarter };
    base + Duration::from_nanos(extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_and_lookups_are_repeated() {
        for op in Op::ALL {
            let want = matches!(
                op,
                Op::Read
                    | Op::Stat
                    | Op::Open
                    | Op::Readdir
                    | Op::Ping
                    | Op::Stats
                    | Op::CheckParent
                    | Op::Statfs
                    | Op::Readlink
            );
            assert_eq!(idempotent(op), want, "{op}");
        }
    }

    #[test]
    fn classification() {
        assert_eq!(transience(libc::EAGAIN), Transience::Transient);
        assert_eq!(transience(libc::EBUSY), Transience::Transient);
        assert_eq!(transience(libc::ETIMEDOUT), Transience::IfReachable);
        for e in [
            libc::ENOENT,
            libc::EIO,
            libc::ESTALE,
            libc::ECONNRESET,
            libc::EINVAL,
        ] {
            assert_eq!(transience(e), Transience::Permanent);
        }
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        assert_eq!(backoff(1, 0), Duration::from_millis(20));
        assert_eq!(backoff(2, 0), Duration::from_millis(40));
        assert_eq!(backoff(3, 0), Duration::from_millis(80));
        assert_eq!(backoff(30, 0), Duration::from_secs(2));
        let j = backoff(1, u64::MAX);
        assert!(j >= Duration::from_millis(20) && j < Duration::from_millis(25));
    }
}
