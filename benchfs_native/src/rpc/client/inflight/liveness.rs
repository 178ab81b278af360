//! Liveness probes: a call not answered within [`SLOW_AFTER`] makes the
//! window ping its node, with the ping's own short deadline
//! ([`PING_LIMIT`]). A daemon answers an empty ping from its event loop at
//! once, whatever its queue, so a ping that times out means the daemon's
//! loop does not run: the process is gone, stopped or hung, or its host or
//! network is. Every call outstanding on that node then fails at once,
//! naming the node and what the ping showed, and no call is repeated into
//! it until it answers again (any reply clears the mark).

use std::time::{Duration, Instant};

use rustc_hash::{FxHashMap, FxHashSet};

use super::super::connect::Conn;

/// How long a call waits for its answer before its node is pinged.
pub(super) const SLOW_AFTER: Duration = Duration::from_secs(1);
/// How long the ping may take.
pub(super) const PING_LIMIT: Duration = Duration::from_secs(2);

/// What the window knows of each node's liveness.
#[derive(Debug, Default)]
pub(super) struct Liveness {
    /// Nodes with a ping in flight.
    probing: FxHashSet<u32>,
    /// Nodes that did not answer their ping: why, in words.
    unresponsive: FxHashMap<u32, String>,
    /// When each node last answered.
    answered: FxHashMap<u32, Instant>,
}

impl Liveness {
    /// Whether a call to `node` issued at `issued` is due a ping now: slow,
    /// its node not being pinged, and silent since the call was issued. A
    /// node known unresponsive is pinged again for each new slow call (it
    /// may be back).
    pub(super) fn due(&self, node: u32, issued: Instant, slow: Duration, now: Instant) -> bool {
        now.saturating_duration_since(issued) >= slow
            && !self.probing.contains(&node)
            && self
                .answered
                .get(&node)
                .is_none_or(|t| now.saturating_duration_since(*t) >= slow)
    }

    pub(super) fn probing(&mut self, node: u32) {
        self.probing.insert(node);
    }

    /// `node` answered (a ping or any call).
    pub(super) fn answered(&mut self, node: u32, now: Instant) {
        self.answered.insert(node, now);
        self.unresponsive.remove(&node);
    }

    /// The ping of `node` is over (answered or not).
    pub(super) fn probe_over(&mut self, node: u32) {
        self.probing.remove(&node);
    }

    /// Marks `node` unresponsive; returns the words for its calls' errors.
    pub(super) fn unresponsive(&mut self, conn: &Conn, node: u32, limit: Duration) -> String {
        let mut why = format!(
            "node {} does not answer a ping within {:.1} s",
            conn.node_name(node),
            limit.as_secs_f64()
        );
        if let Some(n) = conn.nodes.get(node as usize) {
            if !n.process_alive() {
                why.push_str(&format!(": the daemon process {} is gone", n.pid));
            } else if n.process_stopped() {
                why.push_str(&format!(
                    ": the daemon process {} is stopped (state T in /proc/{}/stat: SIGSTOP or a debugger)",
                    n.pid, n.pid
                ));
            } else if n.local {
                why.push_str(&format!(
                    ": the daemon process {} exists but its loop does not run",
                    n.pid
                ));
            } else {
                why.push_str(&format!(
                    " (on host {}: its process, host or network is down or hung)",
                    n.host
                ));
            }
        }
        self.unresponsive.insert(node, why.clone());
        why
    }

    /// Why `node` is known unresponsive, if it is.
    pub(super) fn why_unresponsive(&self, node: u32) -> Option<&str> {
        self.unresponsive.get(&node).map(String::as_str)
    }

    /// Forgets pings in flight (the window gave up its calls).
    pub(super) fn forget_probes(&mut self) {
        self.probing.clear();
    }
}
