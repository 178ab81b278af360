//! Channels whose client is gone: freed at once, with everything the
//! client had in the loop (docs/RELIABILITY.md, "Engine and sessions").
//!
//! A client killed in the middle of a transfer shows up as a failed
//! operation on its channel's endpoint: the receive of its write data
//! fails (its process is gone under UCX's shared-memory copy, see
//! `benchfs_ucx::survive_dead_peers`, or its connection was reset), or a
//! reply to it fails with a peer-failure status. [`Peers`] notes its
//! channel, which the loop frees at the end of its turn: its queued
//! requests are dropped, its receives and sends still in flight are
//! abandoned to UCX (their slots come back, a fresh buffer takes the place
//! of each one's), and its endpoint is closed. Other clients are not
//! touched.
//!
//! A client killed without a failed copy (waiting for a reply over shared
//! memory, say) leaves no such trace: [`Peers::stalled`] finds the
//! channels that have carried no request for `channel_stall_reclaim`
//! while one of their transfers has been unfinished as long.

use std::time::{Duration, Instant};

use benchfs_ucx::Error as UcxError;

use super::replies::Replies;
use super::sessions::Sessions;
use super::slots::Slots;

/// How often stalled channels are looked for.
const STALL_CHECK: Duration = Duration::from_secs(1);

/// Whether a failed operation means its peer is gone.
pub(super) fn peer_gone(e: &UcxError) -> bool {
    // A failed shared-memory copy reports an I/O error.
    e.is_peer_failure() || e.errno() == libc::EIO
}

/// The channels found dead this turn, and when to look for stalled ones.
#[derive(Debug)]
pub(super) struct Peers {
    dead: Vec<(u16, String)>,
    stall_bound: Duration,
    next_stall_check: Instant,
}

impl Peers {
    /// A channel stalls after `stall_bound`.
    pub(super) fn new(stall_bound: Duration) -> Peers {
        Peers {
            dead: Vec::new(),
            stall_bound,
            next_stall_check: Instant::now() + STALL_CHECK,
        }
    }

    /// Notes that the client of `channel` is gone (`why`), if the channel
    /// is open and not noted yet.
    pub(super) fn failed(&mut self, channel: u16, why: String, sessions: &Sessions) {
        if sessions.endpoint(channel).is_some() && !self.dead.iter().any(|(c, _)| *c == channel) {
            self.dead.push((channel, why));
        }
    }

    /// The channels noted since the last call, and why.
    pub(super) fn take_dead(&mut self) -> Vec<(u16, String)> {
        std::mem::take(&mut self.dead)
    }

    /// Whether a channel was noted.
    pub(super) fn any_dead(&self) -> bool {
        !self.dead.is_empty()
    }

    /// Whether the look for stalled channels is due at `now` (once every
    /// [`STALL_CHECK`]).
    pub(super) fn stall_check_due(&mut self, now: Instant) -> bool {
        if now < self.next_stall_check {
            return false;
        }
        self.next_stall_check = now + STALL_CHECK;
        true
    }

    /// The open channels that have carried no request for the stall bound
    /// while a write's data to them or a reply from them has been
    /// unfinished as long. A live client takes its reply data, or sends
    /// its write data, within its own RPC deadline.
    pub(super) fn stalled(
        &self,
        now: Instant,
        slots: &Slots,
        replies: &Replies,
        sessions: &Sessions,
    ) -> Vec<u16> {
        let old = |t: Instant| now.saturating_duration_since(t) >= self.stall_bound;
        let mut stalled: Vec<u16> = slots
            .receiving_since()
            .chain(replies.sending_since())
            .filter(|&(_, since)| old(since))
            .map(|(channel, _)| channel)
            .collect();
        stalled.sort_unstable();
        stalled.dedup();
        stalled.retain(|&id| sessions.last_used(id).is_some_and(old));
        stalled
    }

    /// The words of a stalled channel's log line.
    pub(super) fn stall_reason(&self) -> String {
        format!(
            "no request for {:.0} s and a transfer unfinished as long: its client is gone or stopped",
            self.stall_bound.as_secs_f64()
        )
    }
}
