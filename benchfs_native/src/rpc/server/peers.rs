//! Channels whose client is gone: freed at once, with everything the
//! client had in the loop (docs/RELIABILITY.md, "Engine and sessions").
//!
//! A client killed in the middle of a transfer shows up as a failed
//! operation on its channel's endpoint: the receive of its write data
//! fails (its process is gone under UCX's shared-memory copy, see
//! `benchfs_ucx::survive_dead_peers`, or its connection was reset), or a
//! reply to it fails with a peer-failure status. Its channel is then freed
//! at the end of the loop's turn: its queued requests are dropped, its
//! receives and sends still in flight are abandoned to UCX (their slots
//! come back, a fresh buffer takes the place of each one's), and its
//! endpoint is closed. Other clients are not touched.

use std::time::Instant;

use benchfs_ucx::Error as UcxError;

use super::event_loop::{CLOSE_DEADLINE, Server};

/// Whether a failed operation means its peer is gone.
pub(super) fn peer_gone(e: &UcxError) -> bool {
    // A failed shared-memory copy reports an I/O error.
    e.is_peer_failure() || e.errno() == libc::EIO
}

impl Server<'_> {
    /// Notes that the client of `channel` is gone; its channel is freed
    /// at the end of this turn ([`Server::free_dead_channels`]).
    pub(super) fn peer_failed(&mut self, channel: u16, why: String) {
        if self.channels.get(channel).is_some() && !self.dead.iter().any(|(c, _)| *c == channel) {
            self.dead.push((channel, why));
        }
    }

    /// Frees the channels noted by [`Server::peer_failed`].
    pub(super) fn free_dead_channels(&mut self) -> bool {
        if self.dead.is_empty() {
            return false;
        }
        for (id, why) in std::mem::take(&mut self.dead) {
            if self.free_channel(id, &format!("its client is gone ({why})")) {
                self.stats.channels_dead += 1;
            }
        }
        true
    }

    /// Frees every channel that has carried no request for
    /// `channel_stall_reclaim` while one of its transfers has been
    /// unfinished as long. A live client takes its reply data, or sends its
    /// write data, within its own RPC deadline; one killed without a failed
    /// copy (waiting for a reply over shared memory, say) leaves no other
    /// trace, and its transfers would hold their slots for ever.
    pub(super) fn free_stalled_channels(&mut self, now: Instant) {
        let bound = self.cfg.channel_stall_reclaim;
        let old = |t: Instant| now.saturating_duration_since(t) >= bound;
        let mut stalled: Vec<u16> = Vec::new();
        for r in &self.receiving {
            if let Some(m) = self.slots.get(r.job.token)
                && old(m.dispatched)
            {
                stalled.push(m.route.channel);
            }
        }
        for s in &self.sends {
            if let Some((m, _, start)) = s.done
                && old(start)
            {
                stalled.push(m.route.channel);
            }
        }
        stalled.sort_unstable();
        stalled.dedup();
        for id in stalled {
            if !self.channels.get(id).is_some_and(|c| old(c.last_used)) {
                continue;
            }
            let why = format!(
                "no request for {:.0} s and a transfer unfinished as long: its client is gone or stopped",
                bound.as_secs_f64()
            );
            if self.free_channel(id, &why) {
                self.stats.channels_stalled += 1;
            }
        }
    }

    /// Closes channel `id` and drops what its client had in the loop;
    /// `false` when no such channel is open.
    pub(super) fn free_channel(&mut self, id: u16, why: &str) -> bool {
        let Some(ch) = self.channels.remove(id) else {
            return false;
        };
        let dropped = self.abandon_work(id);
        self.stats.requests_abandoned += dropped as u64;
        self.log(&format!(
            "freed channel {id} of {:?}: {why}; {dropped} of its requests dropped",
            ch.client_name
        ));
        // Nothing is waited for: the close of a failed endpoint ends at
        // once, and a close that cannot finish is left to the worker.
        let _ = ch.ep.close(Instant::now() + CLOSE_DEADLINE);
        true
    }

    /// Drops the queued, receiving and sending requests of channel `id`;
    /// returns how many.
    fn abandon_work(&mut self, id: u16) -> usize {
        let now = Instant::now();
        let before = self.queue.len();
        self.queue.retain(|q| q.meta.route.channel != id);
        let mut dropped = before - self.queue.len();
        let mut i = 0;
        while i < self.receiving.len() {
            let token = self.receiving[i].job.token;
            let Some(meta) = self.slots.get_mut(token).map(|m| *m) else {
                i += 1;
                continue;
            };
            if meta.route.channel != id {
                i += 1;
                continue;
            }
            // The receive's buffer goes with it.
            drop(self.receiving.swap_remove(i));
            self.bufs.put(Vec::new());
            self.finish(Some(token), Some((meta, libc::ECONNRESET, now)));
            dropped += 1;
        }
        let mut i = 0;
        while i < self.sends.len() {
            let Some((meta, _, start)) = self.sends[i].done else {
                i += 1;
                continue;
            };
            if meta.route.channel != id {
                i += 1;
                continue;
            }
            let s = self.sends.swap_remove(i);
            if s.pooled {
                self.bufs.put(Vec::new());
            }
            let token = s.token;
            drop(s);
            self.finish(token, Some((meta, libc::ECONNRESET, start)));
            dropped += 1;
        }
        dropped
    }
}
