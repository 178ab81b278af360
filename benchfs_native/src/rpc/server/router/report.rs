//! What the server reports: the stats JSON, the datagrams of other jobs,
//! and the summary at the end of the run.

use benchfs_ucx::ForeignSignals;

use super::Router;
use crate::rpc::server::stats::{self, Gauges, Identity, ServerReport};

impl Router {
    /// The stats JSON document now.
    pub(super) fn stats_json(&self) -> String {
        let id = Identity {
            node_name: &self.cfg.node_name,
            node_id: self.cfg.node_id,
            chunk_size: self.chunk_size,
            max_concurrency: self.cfg.max_concurrency,
            durability: self.cfg.durability.name(),
            bulk_spin_us: u64::try_from(self.cfg.bulk_spin.as_micros()).unwrap_or(u64::MAX),
        };
        let g = Gauges {
            queue_depth: self.slots.queued(),
            in_flight: self.slots.in_flight(),
            channels_open: self.sessions.open_count(),
            channels_opened: self.sessions.opened_total(),
            stopping: self.stop.is_stopping(),
            namespace_records: self.storage.namespace_records(),
            link_table_entries: self.storage.link_table_entries(),
        };
        let kernel = crate::sys::kernel::snapshot(self.storage.root());
        stats::to_json(&id, &self.stats, &g, &self.storage.store_stats(), kernel)
    }

    /// Datagrams from outside the job counted so far.
    pub(in crate::rpc::server) fn stats_foreign_datagrams(&self) -> u64 {
        self.stats.foreign_datagrams
    }

    /// The worker's wake-up sockets had `new` more datagrams from outside
    /// the job (`seen`: all so far): counted, and now and then traced.
    pub(in crate::rpc::server) fn foreign_signals(&mut self, seen: ForeignSignals, new: u64) {
        self.stats.foreign_datagrams = seen.datagrams;
        self.stats.foreign_wakeups = seen.wakeups;
        self.stats.foreign_sender = (seen.last_uid, seen.last_pid);
        if let Some(n) = self.outsiders.arrived(new) {
            self.replies.record_foreign(n, seen.last_uid, seen.last_pid);
        }
    }

    /// Closes every session, drops what is still pending, writes out the
    /// event log and stops the storage threads; returns what the run did.
    pub(in crate::rpc::server) fn finish_run(&mut self) -> ServerReport {
        self.sessions.close_all(&self.log);
        self.slots.clear();
        if let Some(n) = self.outsiders.rest() {
            let (uid, pid) = self.stats.foreign_sender;
            self.replies.record_foreign(n, uid, pid);
        }
        self.replies.close();
        if !self.storage.stop() {
            self.log
                .line("storage threads still busy at shutdown; left to finish");
        }
        let (buffer_grows, buffers) = self.slots.buffer_counts();
        ServerReport {
            stats: self.stats.clone(),
            stop_reason: self.stop.reason(),
            forced: self.stop.forced(),
            drained: self.drained(),
            channels_opened: self.sessions.opened_total(),
            buffer_grows,
            buffers,
        }
    }
}
