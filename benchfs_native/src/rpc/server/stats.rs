//! The server's counters and the stats JSON (docs/RPC.md, "Stats").
//! Plain integers owned by the event loop: no atomics on the data path.

use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::rpc::wire::Op;
use crate::storage::StoreStats;

/// Why a message was refused before it reached the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// The wire header did not decode: dropped.
    Header,
    /// The header decoded, the body did not: EBADMSG reply.
    Body,
    /// The payload length differs from the header's: EBADMSG reply.
    Payload,
    /// No open channel of that number: dropped.
    Channel,
    /// Routed to another node id: ESTALE reply.
    Node,
    /// A session message that did not decode (or named a wrong channel).
    Session,
}

const REJECTED: [(Rejected, &str); 6] = [
    (Rejected::Header, "header"),
    (Rejected::Body, "body"),
    (Rejected::Payload, "payload"),
    (Rejected::Channel, "channel"),
    (Rejected::Node, "node"),
    (Rejected::Session, "session"),
];

/// What a finished run reports.
#[derive(Debug, Clone)]
pub struct ServerReport {
    /// The counters.
    pub stats: ServerStats,
    /// Why it stopped (`SIGTERM`, `shutdown request`, ...).
    pub stop_reason: String,
    /// Whether queued requests were refused instead of drained.
    pub forced: bool,
    /// Whether every request was answered before the drain deadline.
    pub drained: bool,
    /// Channels opened over the run.
    pub channels_opened: u64,
    /// Data buffers allocated or grown over the run.
    pub buffer_grows: u64,
    /// Data buffers in existence at the end.
    pub buffers: usize,
}

/// Counters of one server run.
#[derive(Debug, Clone)]
pub struct ServerStats {
    /// Requests by op code (index `code - 1`).
    pub requests: [u64; Op::ALL.len()],
    /// Error replies by op code.
    pub errors: [u64; Op::ALL.len()],
    /// Write payload bytes received.
    pub bytes_in: u64,
    /// Read payload bytes sent.
    pub bytes_out: u64,
    /// Messages refused before any work, by reason ([`Rejected`] order).
    pub rejected: [u64; 6],
    /// Longest the wait queue has been.
    pub queue_peak: usize,
    /// Most requests in flight at once.
    pub in_flight_peak: usize,
    /// Data requests the loop started on the store's ring itself (no
    /// storage thread).
    pub data_on_ring: u64,
    /// Namespace requests and data stats the loop ran itself (no storage
    /// thread).
    pub run_in_loop: u64,
    /// Connects refused (EBUSY / ESHUTDOWN).
    pub connects_refused: u64,
    /// Idle channels freed for a new session while every channel was taken.
    pub channels_reclaimed: u64,
    /// Channels freed because their client was found gone.
    pub channels_dead: u64,
    /// Channels freed because their transfers stalled (see
    /// `channel_stall_reclaim`).
    pub channels_stalled: u64,
    /// Requests of freed channels dropped unanswered.
    pub requests_abandoned: u64,
    /// Requests refused with ESHUTDOWN while stopping.
    pub refused_stopping: u64,
    /// Replies dropped because their channel was closed meanwhile.
    pub replies_dropped: u64,
    /// Looks at the run queue, after bulk data, that found no thread
    /// waiting for a CPU (the idle loop spun on).
    pub bulk_spin_free: u64,
    /// Looks that found threads waiting for a CPU (the loop slept).
    pub bulk_spin_busy: u64,
    /// Idle spells that slept at once because threads waited for a CPU.
    pub idle_contended: u64,
    /// Datagrams from other users on the shared-memory transports'
    /// wake-up sockets (interference from outside the job).
    pub foreign_datagrams: u64,
    /// Wake-ups of the idle loop that only such datagrams caused.
    pub foreign_wakeups: u64,
    /// The uid and pid of the last sender of one (0: none yet).
    pub foreign_sender: (u32, i32),
    /// Time of the answered requests, by op code (the `timing` of the stats).
    pub timing: [OpTime; Op::ALL.len()],
    /// When the server started.
    pub started: Instant,
}

/// Buckets of a [`OpTime`] histogram: four per power of two from 1 us up,
/// the last one open (about 2^31 us, 36 min, and longer).
pub const HIST_BUCKETS: usize = 124;

/// The cumulative time of one op's answered requests: a sampler diffs two
/// stats replies for the interval's mean per layer, and the histograms for
/// its p99. A few adds per request, no clock read of their own.
#[derive(Debug, Clone, Copy)]
pub struct OpTime {
    /// Requests answered (their reply handed to UCX).
    pub answered: u64,
    /// Arrival to dispatch (waiting for a slot and a buffer), summed.
    pub queue_ns: u64,
    /// In the chunk store (submission to completion), summed.
    pub storage_ns: u64,
    /// Arrival to the reply handed to UCX, summed.
    pub server_ns: u64,
    /// Server time per request, in [`bucket`]s.
    pub server_hist: [u64; HIST_BUCKETS],
    /// Storage time per request with a storage part, in [`bucket`]s.
    pub storage_hist: [u64; HIST_BUCKETS],
}

impl OpTime {
    const ZERO: OpTime = OpTime {
        answered: 0,
        queue_ns: 0,
        storage_ns: 0,
        server_ns: 0,
        server_hist: [0; HIST_BUCKETS],
        storage_hist: [0; HIST_BUCKETS],
    };
}

/// The histogram bucket of `ns`: four per power of two of microseconds
/// (bucket `4k + j` holds `[2^k (1 + j/4), 2^k (1 + (j+1)/4))` us; under
/// 1 us is bucket 0).
pub fn bucket(ns: u64) -> usize {
    let us = ns / 1000;
    if us == 0 {
        return 0;
    }
    let k = 63 - us.leading_zeros() as usize;
    let quarter = if k >= 2 {
        ((us >> (k - 2)) & 3) as usize
    } else {
        ((us << (2 - k)) & 3) as usize
    };
    (4 * k + quarter).min(HIST_BUCKETS - 1)
}

/// The upper bound of bucket `i` in microseconds (exclusive).
pub fn bucket_upper_us(i: usize) -> f64 {
    let k = i / 4;
    let j = (i % 4) as f64;
    (1u64 << k) as f64 * (1.0 + (j + 1.0) / 4.0)
}

impl ServerStats {
    /// Zero counters, started now.
    pub fn new() -> ServerStats {
        ServerStats {
            requests: [0; Op::ALL.len()],
            errors: [0; Op::ALL.len()],
            bytes_in: 0,
            bytes_out: 0,
            rejected: [0; 6],
            queue_peak: 0,
            in_flight_peak: 0,
            data_on_ring: 0,
            run_in_loop: 0,
            idle_contended: 0,
            connects_refused: 0,
            channels_reclaimed: 0,
            channels_dead: 0,
            channels_stalled: 0,
            requests_abandoned: 0,
            refused_stopping: 0,
            replies_dropped: 0,
            bulk_spin_free: 0,
            bulk_spin_busy: 0,
            foreign_datagrams: 0,
            foreign_wakeups: 0,
            foreign_sender: (0, 0),
            timing: [OpTime::ZERO; Op::ALL.len()],
            started: Instant::now(),
        }
    }

    fn index(op: Op) -> usize {
        usize::from(op.code()) - 1
    }

    /// Counts a request of `op`.
    #[inline]
    pub fn request(&mut self, op: Op) {
        self.requests[Self::index(op)] += 1;
    }

    /// Counts an error reply to `op`.
    #[inline]
    pub fn error(&mut self, op: Op) {
        self.errors[Self::index(op)] += 1;
    }

    /// Times an answered request of `op`: `queue_ns` arrival to dispatch,
    /// `storage_ns` in the store (0: none), `server_ns` arrival to reply.
    #[inline]
    pub fn answered(&mut self, op: Op, queue_ns: u64, storage_ns: u64, server_ns: u64) {
        let t = &mut self.timing[Self::index(op)];
        t.answered += 1;
        t.queue_ns += queue_ns;
        t.storage_ns += storage_ns;
        t.server_ns += server_ns;
        t.server_hist[bucket(server_ns)] += 1;
        if storage_ns > 0 {
            t.storage_hist[bucket(storage_ns)] += 1;
        }
    }

    /// The `timing` object: per op name with answered requests, the
    /// summed times and the histograms as `[upper_us, count]` pairs of
    /// their non-empty buckets.
    pub fn timing_map(&self) -> Map<String, Value> {
        let hist = |h: &[u64; HIST_BUCKETS]| -> Value {
            h.iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(i, n)| json!([bucket_upper_us(i), n]))
                .collect()
        };
        Op::ALL
            .iter()
            .zip(&self.timing)
            .filter(|(_, t)| t.answered > 0)
            .map(|(op, t)| {
                let v = json!({
                    "answered": t.answered,
                    "queue_ns": t.queue_ns,
                    "storage_ns": t.storage_ns,
                    "server_ns": t.server_ns,
                    "server_hist_us": hist(&t.server_hist),
                    "storage_hist_us": hist(&t.storage_hist),
                });
                (op.name().to_owned(), v)
            })
            .collect()
    }

    /// Counts a refused message.
    pub fn reject(&mut self, why: Rejected) {
        if let Some(i) = REJECTED.iter().position(|(r, _)| *r == why) {
            self.rejected[i] += 1;
        }
    }

    /// Every refused message (the `decode_errors` of the stats).
    pub fn decode_errors(&self) -> u64 {
        self.rejected.iter().sum()
    }

    /// Requests per op name (ops with none left out).
    pub fn by_op(counts: &[u64; Op::ALL.len()]) -> Map<String, Value> {
        Op::ALL
            .iter()
            .zip(counts)
            .filter(|(_, n)| **n > 0)
            .map(|(op, n)| (op.name().to_owned(), json!(n)))
            .collect()
    }

    /// Refusals per reason name.
    pub fn rejected_map(&self) -> Map<String, Value> {
        REJECTED
            .iter()
            .zip(self.rejected)
            .map(|((_, name), n)| ((*name).to_owned(), json!(n)))
            .collect()
    }
}

impl Default for ServerStats {
    fn default() -> Self {
        ServerStats::new()
    }
}

/// What only the loop knows at the moment of a stats request.
#[derive(Debug, Clone, Copy)]
pub struct Gauges {
    /// Requests waiting for a slot.
    pub queue_depth: usize,
    /// Requests holding a slot.
    pub in_flight: usize,
    /// Open channels.
    pub channels_open: usize,
    /// Channels opened since start.
    pub channels_opened: u64,
    /// Whether the server is stopping.
    pub stopping: bool,
    /// Namespace records held (the root not counted).
    pub namespace_records: usize,
    /// Entries of the link table.
    pub link_table_entries: usize,
}

/// Who the server is, for the stats JSON.
#[derive(Debug, Clone, Copy)]
pub struct Identity<'a> {
    /// Node name.
    pub node_name: &'a str,
    /// Node id.
    pub node_id: u32,
    /// Chunk size.
    pub chunk_size: u64,
    /// Concurrency bound.
    pub max_concurrency: usize,
    /// Durability mode (clients read it to decide on fsync at close).
    pub durability: &'a str,
    /// The idle loop's spin after bulk data, in microseconds.
    pub bulk_spin_us: u64,
}

/// The stats JSON document (keys documented in docs/RPC.md).
pub fn to_json(
    id: &Identity<'_>,
    s: &ServerStats,
    g: &Gauges,
    store: &StoreStats,
    kernel: Value,
) -> String {
    let mut doc = json!({
        "node_name": id.node_name,
        "node_id": id.node_id,
        "pid": std::process::id(),
        "uptime_s": s.started.elapsed().as_secs_f64(),
        "chunk_size": id.chunk_size,
        "max_concurrency": id.max_concurrency,
        "durability": id.durability,
        "protocol_version": crate::rpc::wire::VERSION,
        "requests": Value::Object(ServerStats::by_op(&s.requests)),
        "errors": Value::Object(ServerStats::by_op(&s.errors)),
        "requests_total": s.requests.iter().sum::<u64>(),
        "errors_total": s.errors.iter().sum::<u64>(),
        "bytes_in": s.bytes_in,
        "bytes_out": s.bytes_out,
        "decode_errors": s.decode_errors(),
        "rejected": Value::Object(s.rejected_map()),
        "queue_depth": g.queue_depth,
        "queue_peak": s.queue_peak,
        "in_flight": g.in_flight,
        "in_flight_peak": s.in_flight_peak,
        "channels_open": g.channels_open,
        "channels_opened": g.channels_opened,
        "connects_refused": s.connects_refused,
        "channels_reclaimed": s.channels_reclaimed,
        "refused_stopping": s.refused_stopping,
        "replies_dropped": s.replies_dropped,
        "stopping": g.stopping,
        "namespace_records": g.namespace_records,
        "link_table_entries": g.link_table_entries,
        "store": {
            "submits": store.submits,
            "sqes": store.sqes,
            "completed_ops": store.completed_ops,
            "in_flight": store.in_flight,
            "pool_buffers": store.pool_buffers,
            "pool_free": store.pool_free,
            "pool_waits": store.pool_waits,
            "direct_ops": store.direct_ops,
            "buffered_ops": store.buffered_ops,
            "fd_cache_hits": store.fd_cache_hits,
            "fd_cache_misses": store.fd_cache_misses,
        },
    });
    // Added apart: one more key in the literal passes json!'s recursion limit.
    if let Value::Object(m) = &mut doc {
        m.insert("channels_dead".into(), s.channels_dead.into());
        m.insert("data_on_ring".into(), s.data_on_ring.into());
        m.insert("run_in_loop".into(), s.run_in_loop.into());
        m.insert("channels_stalled".into(), s.channels_stalled.into());
        m.insert("requests_abandoned".into(), s.requests_abandoned.into());
        m.insert("bulk_spin_us".into(), id.bulk_spin_us.into());
        m.insert("bulk_spin_free".into(), s.bulk_spin_free.into());
        m.insert("bulk_spin_busy".into(), s.bulk_spin_busy.into());
        m.insert("idle_contended".into(), s.idle_contended.into());
        m.insert("timing".into(), Value::Object(s.timing_map()));
        m.insert(
            "foreign_signals".into(),
            serde_json::json!({
                "datagrams": s.foreign_datagrams,
                "wakeups": s.foreign_wakeups,
                "last_uid": s.foreign_sender.0,
                "last_pid": s.foreign_sender.1,
            }),
        );
        m.insert(
            "dead_peer_copies".into(),
            benchfs_ucx::dead_peer_copies().into(),
        );
        m.insert("kernel".into(), kernel);
    }
    doc.to_string()
}

#[cfg(test)]
mod tests {
    use super::{HIST_BUCKETS, bucket, bucket_upper_us};

    #[test]
    fn a_bucket_holds_its_time_below_its_upper_bound() {
        for us in [1u64, 2, 3, 5, 7, 100, 1_100, 194_000, 3_000_000] {
            let i = bucket(us * 1000);
            assert!((us as f64) < bucket_upper_us(i), "{us} us in bucket {i}");
            assert!(
                i == 0 || bucket_upper_us(i - 1) <= us as f64,
                "{us} us in bucket {i}"
            );
        }
        assert_eq!(bucket(999), 0);
        assert_eq!(bucket(u64::MAX), HIST_BUCKETS - 1);
    }
}
