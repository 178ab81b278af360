//! The channels found gone or stalled, and the requests they take with
//! them.

use std::time::Instant;

use super::Router;

impl Router {
    /// Frees the channels whose client was found gone this turn.
    pub(in crate::rpc::server) fn free_dead_channels(&mut self) -> bool {
        if !self.peers.any_dead() {
            return false;
        }
        for (id, why) in self.peers.take_dead() {
            if self.free_channel(id, &format!("its client is gone ({why})")) {
                self.stats.channels_dead += 1;
            }
        }
        true
    }

    /// Frees stalled channels when the check is due.
    pub(in crate::rpc::server) fn check_stalls(&mut self) {
        let now = Instant::now();
        if !self.peers.stall_check_due(now) {
            return;
        }
        let stalled = self
            .peers
            .stalled(now, &self.slots, &self.replies, &self.sessions);
        for id in stalled {
            let why = self.peers.stall_reason();
            if self.free_channel(id, &why) {
                self.stats.channels_stalled += 1;
            }
        }
    }

    /// Closes channel `id` and drops what its client had in the loop: its
    /// queued requests, its receives and its replies in flight; `false`
    /// when no such channel is open.
    fn free_channel(&mut self, id: u16, why: &str) -> bool {
        let Some(ch) = self.sessions.remove(id) else {
            return false;
        };
        let now = Instant::now();
        let (queued, receiving) = self.slots.abandon(id);
        let mut dropped = queued;
        for (token, meta) in receiving {
            self.finish(Some(token), meta, libc::ECONNRESET, now);
            dropped += 1;
        }
        for s in self.replies.abandon(id) {
            if s.pooled {
                self.slots.put_buf(Vec::new());
            }
            let (meta, _, start) = s.done;
            let token = s.token;
            drop(s);
            self.finish(token, meta, libc::ECONNRESET, start);
            dropped += 1;
        }
        self.stats.requests_abandoned += dropped as u64;
        self.log.line(&format!(
            "freed channel {id} of {:?}: {why}; {dropped} of its requests dropped",
            ch.client_name
        ));
        // Nothing is waited for: the close goes on as the loop turns.
        self.sessions.close_endpoint(ch);
        true
    }
}
