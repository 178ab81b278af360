//! The router: the server's parts and how a request moves between them,
//! from its arrival ([`requests`](super::requests)) through its slot
//! ([`slots`](super::slots)), its storage work
//! ([`storage`](super::storage)) and its reply
//! ([`replies`](super::replies)) to its record in the event log; and
//! what a channel found gone or stalled ([`peers`](super::peers)) takes
//! with it. The event loop calls it every turn; only here do the parts
//! meet.
//!
//! * `completion`: a request's end: its outcome answered, its reply sent,
//!   its record written.
//! * `gone`: the channels found gone or stalled.
//! * `report`: the stats JSON and the end-of-run report.

mod completion;
mod gone;
mod report;

use std::sync::Arc;
use std::time::{Duration, Instant};

use benchfs_ucx::{AmMessage, Request, Worker};

use super::clock::unix_now_ns;
use super::config::{Durability, ServerConfig};
use super::data_buf::DataBuf;
use super::idle::{Idle, IdlePolicy};
use super::log::Log;
use super::outsiders::Outsiders;
use super::peers::{Peers, peer_gone};
use super::replies::Replies;
use super::requests::{Arrival, Intake};
use super::sessions::{ConnectGate, Context, Sessions};
use super::slots::{Queued, Receiving, Slots};
use super::stats::ServerStats;
use super::stop::Stopping;
use super::storage::{Failure, Job, Outcome, Started, StoragePool, runs_in_loop};
use crate::error::Result;
use crate::rpc::wire::{Reply, RequestOf};
use crate::storage::ChunkStore;
use crate::trace::TraceBuffer;

/// The parts of one server.
#[derive(Debug)]
pub(super) struct Router {
    cfg: ServerConfig,
    chunk_size: u64,
    intake: Intake,
    sessions: Sessions,
    slots: Slots,
    storage: StoragePool,
    replies: Replies,
    peers: Peers,
    stats: ServerStats,
    log: Log,
    idle: IdlePolicy,
    stop: Stopping,
    outsiders: Outsiders,
}

impl Router {
    /// The parts of the server `cfg` describes, on `store`, its storage
    /// threads started; its worker's address starts with `address_header`.
    pub(super) fn new(
        store: Arc<ChunkStore>,
        cfg: ServerConfig,
        address_header: u8,
    ) -> Result<Router> {
        let chunk_size = store.chunk_size();
        let fsync_each = cfg.durability == Durability::FsyncEachWrite;
        let storage = StoragePool::start(store, cfg.max_concurrency, fsync_each, cfg.node_id)?;
        let intake = Intake::new(cfg.node_id, &cfg.node_name, chunk_size);
        let log = Log::new(&cfg.node_name);
        if !cfg.queue_delay.is_zero() {
            log.line(&format!(
                "fault point on: every request held {} us in the queue ({})",
                cfg.queue_delay.as_micros(),
                super::fault::QUEUE_DELAY_VARIABLE
            ));
        }
        Ok(Router {
            chunk_size,
            intake,
            sessions: Sessions::new(&cfg, chunk_size, address_header),
            slots: Slots::new(cfg.max_concurrency, cfg.max_queued, cfg.queue_delay),
            storage,
            replies: Replies::new(cfg.node_id, cfg.trace.clone().map(TraceBuffer::new)),
            peers: Peers::new(cfg.channel_stall_reclaim),
            stats: ServerStats::new(),
            log,
            idle: IdlePolicy::new(cfg.bulk_spin),
            stop: Stopping::default(),
            outsiders: Outsiders::default(),
            cfg,
        })
    }

    /// What the session handler answers forged connects with.
    pub(super) fn gate(&self) -> ConnectGate {
        self.sessions.gate()
    }

    /// The storage pool (its ring to turn, its eventfds to sleep on).
    pub(super) fn storage(&self) -> &StoragePool {
        &self.storage
    }

    /// The log.
    pub(super) fn log(&self) -> &Log {
        &self.log
    }

    /// A turn that did nothing: what the loop does next.
    pub(super) fn idle_turn(&mut self) -> Idle {
        self.idle.idle_turn(&mut self.stats)
    }

    /// A turn that did something.
    pub(super) fn busy(&mut self) {
        self.idle.busy();
    }

    /// The loop goes to sleep.
    pub(super) fn sleeping(&mut self) {
        self.idle.sleeping();
    }

    /// The drain deadline, once stopping.
    pub(super) fn stop_deadline(&self) -> Option<Instant> {
        self.stop.deadline()
    }

    /// How long the loop may sleep while requests are held in the queue (the fault point).
    pub(super) fn held_for(&self) -> Option<Duration> {
        self.slots.held_for(Instant::now())
    }

    /// Requests waiting for a slot, and dispatched.
    pub(super) fn load(&self) -> (usize, usize) {
        (self.slots.queued(), self.slots.in_flight())
    }

    /// Nothing queued, in flight, receiving or being sent.
    pub(super) fn drained(&self) -> bool {
        self.slots.is_empty() && self.replies.is_empty() && self.sessions.accepts_sent()
    }

    /// An arriving session message.
    pub(super) fn on_session(&mut self, msg: &AmMessage, worker: &Worker) {
        let mut cx = Context {
            worker,
            stopping: self.stop.is_stopping(),
            stats: &mut self.stats,
            log: &mut self.log,
        };
        self.sessions.on_message(msg, &mut cx);
    }

    /// An arriving request: answered, queued or refused.
    pub(super) fn on_request(&mut self, msg: AmMessage) {
        let arrival = Instant::now();
        let stopping = self.stop.is_stopping();
        let (sessions, stats, log) = (&mut self.sessions, &mut self.stats, &mut self.log);
        match self
            .intake
            .admit(msg, arrival, sessions, stopping, stats, log)
        {
            Arrival::Dropped => {}
            Arrival::Refused(meta, errno, text) => self.error_reply(meta, errno, &text),
            Arrival::Ping(meta) => {
                let time_unix_ns = unix_now_ns();
                self.answer(
                    meta,
                    &Reply::Ping {
                        time_unix_ns,
                        len: 0,
                    },
                    Vec::new(),
                );
            }
            Arrival::Stats(meta) => {
                let json = self.stats_json().into_bytes();
                let json_len = json.len() as u64;
                self.answer(meta, &Reply::Stats { json_len }, json);
            }
            Arrival::Shutdown(meta, force) => {
                self.answer(meta, &Reply::Shutdown, Vec::new());
                let reason = format!("shutdown request{}", if force { " (force)" } else { "" });
                self.begin_stop(reason, force);
            }
            Arrival::Queue(q) => self.enqueue(q),
        }
    }

    /// Queues a request for a slot, or refuses it at the queue's bound.
    fn enqueue(&mut self, q: Queued) {
        if self.slots.queue_full() {
            let text = format!(
                "{} {}: node {} has {} requests waiting (its bound)",
                q.meta.op,
                q.job.request.path(),
                self.cfg.node_name,
                self.slots.queued()
            );
            return self.error_reply(q.meta, libc::EBUSY, &text);
        }
        let queued = self.slots.push(q);
        self.stats.queue_peak = self.stats.queue_peak.max(queued);
    }

    /// Starts stopping: no new sessions or work; queued requests drain
    /// (or, forced, are refused).
    pub(super) fn begin_stop(&mut self, reason: String, force: bool) {
        let drain = self.cfg.shutdown_deadline;
        if self.stop.begin(reason.clone(), force, drain) {
            self.log.line(&format!(
                "stopping ({reason}{}): {} queued, {} in flight, drain deadline {:.1} s",
                if force { ", forced" } else { "" },
                self.slots.queued(),
                self.slots.in_flight(),
                drain.as_secs_f64()
            ));
        }
        if force {
            for q in self.slots.take_queue() {
                drop(q.msg);
                self.stats.refused_stopping += 1;
                let text = format!(
                    "{} {}: node {} is shutting down",
                    q.meta.op,
                    q.job.request.path(),
                    self.cfg.node_id
                );
                self.error_reply(q.meta, libc::ESHUTDOWN, &text);
            }
        }
    }

    /// Hands queued requests to free slots, oldest first.
    pub(super) fn dispatch(&mut self) -> bool {
        let mut any = false;
        while let Some((mut q, buf)) = self.slots.dispatch(Instant::now()) {
            any = true;
            let in_flight = self.slots.in_flight();
            self.stats.in_flight_peak = self.stats.in_flight_peak.max(in_flight);
            match self.storage.data_into(&mut q.job, q.msg.take(), buf) {
                Some((msg, into)) => self.receive(msg, into, q.job),
                None => self.submit(q.job),
            }
        }
        any
    }

    /// Starts receiving a write's rendezvous data into `into`.
    fn receive(&mut self, msg: AmMessage, into: DataBuf, mut job: Job) {
        match msg.recv_into(into) {
            Ok(req) => self.slots.receiving(Receiving { req, job }),
            // A pool vector that went with the failed receive: a fresh
            // (empty) one takes its place in the pool.
            Err(e) => {
                let buf = std::mem::take(&mut job.buf);
                self.fail_now(&job, &e.to_string(), buf);
            }
        }
    }

    fn submit(&mut self, mut job: Job) {
        if let RequestOf::Ping { echo, .. } = job.request {
            // Nothing for the store to do: answer with the data at once.
            self.stats.bytes_in += job.buf.len() as u64;
            if !echo {
                job.buf.clear();
            }
            let len = job.buf.len() as u64;
            self.stats.bytes_out += len;
            let outcome = Outcome {
                token: job.token,
                result: Ok(Reply::Ping {
                    time_unix_ns: unix_now_ns(),
                    len,
                }),
                buf: job.buf,
                fixed: None,
                storage_ns: 0,
            };
            return self.complete(outcome);
        }
        if runs_in_loop(&job.request) {
            self.stats.run_in_loop += 1;
            let outcome = self.storage.run_now(job);
            return self.complete(outcome);
        }
        match self.storage.submit(job) {
            Ok(Started::OnRing) => self.stats.data_on_ring += 1,
            Ok(Started::Threads) => {}
            Err(mut job) => {
                let buf = std::mem::take(&mut job.buf);
                self.fail_now(&job, "storage pool stopped", buf);
            }
        }
    }

    /// Fails a dispatched request without running it; `buf` takes the
    /// place of its pool buffer.
    fn fail_now(&mut self, job: &Job, why: &str, buf: Vec<u8>) {
        self.complete(Outcome {
            token: job.token,
            result: Err(Failure {
                errno: libc::EIO,
                message: format!("{} {}: {why}", job.request.op(), job.request.path()),
            }),
            buf,
            fixed: None,
            storage_ns: 0,
        });
    }

    /// Writes whose data has arrived go to storage.
    pub(super) fn poll_receiving(&mut self) -> bool {
        let mut any = false;
        while let Some(Receiving { req, job }) = self.slots.received() {
            any = true;
            self.received(req, job);
        }
        any
    }

    /// A write whose data has arrived (or failed to) goes to storage.
    fn received(&mut self, req: Request<DataBuf>, mut job: Job) {
        // Complete: returns at once, applying the received length.
        match req.wait_filled(Instant::now()) {
            Ok(DataBuf::Heap(buf)) => {
                job.buf = buf;
                self.submit(job);
            }
            Ok(DataBuf::Fixed(fixed)) => {
                job.fixed = Some(fixed);
                self.submit(job);
            }
            Err(e) => {
                let why = format!("receiving the write data failed: {e}");
                if peer_gone(&e)
                    && let Some(m) = self.slots.get(job.token)
                {
                    let channel = m.route.channel;
                    self.peers.failed(channel, why.clone(), &self.sessions);
                }
                let buf = std::mem::take(&mut job.buf);
                self.fail_now(&job, &why, buf);
            }
        }
    }
}
