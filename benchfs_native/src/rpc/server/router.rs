//! The router: the server's parts and how a request moves between them,
//! from its arrival ([`requests`](super::requests)) through its slot
//! ([`slots`](super::slots)), its storage work
//! ([`storage`](super::storage)) and its reply
//! ([`replies`](super::replies)) to its record in the event log; and
//! what a channel found gone or stalled ([`peers`](super::peers)) takes
//! with it. The event loop calls it every turn; only here do the parts
//! meet.

use std::sync::Arc;
use std::time::Instant;

use benchfs_ucx::{AmMessage, ForeignSignals, Request, Worker};

use super::clock::unix_now_ns;
use super::config::{Durability, ServerConfig};
use super::data_buf::DataBuf;
use super::idle::{Idle, IdlePolicy};
use super::log::Log;
use super::outsiders::Outsiders;
use super::peers::{Peers, peer_gone};
use super::replies::{Replies, Unsent};
use super::requests::{Arrival, Intake};
use super::sessions::{ConnectGate, Context, Sessions};
use super::slots::{Meta, Queued, Receiving, Slots};
use super::stats::{self, Gauges, Identity, ServerReport, ServerStats};
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
        Ok(Router {
            chunk_size,
            intake,
            sessions: Sessions::new(&cfg, chunk_size, address_header),
            slots: Slots::new(cfg.max_concurrency, cfg.max_queued),
            storage,
            replies: Replies::new(cfg.node_id, cfg.trace.clone().map(TraceBuffer::new)),
            peers: Peers::new(cfg.channel_stall_reclaim),
            stats: ServerStats::new(),
            log: Log::new(&cfg.node_name),
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

    pub(super) fn drain_completions(&mut self) -> bool {
        let mut any = false;
        while let Some(r) = self.storage.try_complete() {
            any = true;
            match r {
                Ok(o) => self.complete(o),
                Err(buf) => self.slots.put_buf(buf),
            }
        }
        any
    }

    /// A storage result: its reply.
    fn complete(&mut self, o: Outcome) {
        let Some(meta) = self.slots.get_mut(o.token) else {
            self.slots.put_buf(o.buf);
            return;
        };
        meta.storage_ns = o.storage_ns;
        let token = Some(o.token);
        let mut buf = o.buf;
        let reply = match o.result {
            Ok(reply) => reply,
            Err(f) => {
                let meta = *meta;
                self.slots.put_buf(buf);
                return self.fail_reply(meta, token, f.errno, &f.message);
            }
        };
        match reply {
            Reply::Write { written } => self.stats.bytes_in += written,
            Reply::Read { .. } => {
                // Read on the ring: sent from the registered buffer the
                // data was read into; the idle pool vector goes back now.
                let (data, pooled) = match o.fixed {
                    Some(fixed) => (DataBuf::Fixed(fixed), false),
                    None => (DataBuf::Heap(std::mem::take(&mut buf)), true),
                };
                let len = data.len() as u64;
                meta.bytes = len;
                let meta = *meta;
                if !pooled {
                    self.slots.put_buf(buf);
                }
                self.stats.bytes_out += len;
                return self.send(meta, &Reply::Read { len }, data, pooled, token, 0);
            }
            _ => {}
        }
        let meta = *meta;
        if meta.op.reply_payload() {
            // Directory entries, a link's target, an echo: in the buffer.
            self.send(meta, &reply, DataBuf::Heap(buf), true, token, 0);
        } else {
            buf.clear();
            self.slots.put_buf(buf);
            self.send(meta, &reply, DataBuf::Heap(Vec::new()), false, token, 0);
        }
    }

    /// A reply to a request that holds no slot, with its payload.
    fn answer(&mut self, meta: Meta, reply: &Reply<'_>, payload: Vec<u8>) {
        self.send(meta, reply, DataBuf::Heap(payload), false, None, 0);
    }

    /// An error reply to a request that holds no slot.
    fn error_reply(&mut self, meta: Meta, errno: i32, message: &str) {
        self.fail_reply(meta, None, errno, message);
    }

    /// An error reply; `token` is the request's slot, if it holds one.
    fn fail_reply(&mut self, meta: Meta, token: Option<u32>, errno: i32, message: &str) {
        self.stats.error(meta.op);
        let reply = Reply::Error {
            op: meta.op,
            errno,
            message,
        };
        self.send(meta, &reply, DataBuf::Heap(Vec::new()), false, token, errno);
    }

    /// Sends `reply` with `payload` (a pool vector when `pooled`) on the
    /// request's channel; the slot `token` (if any) is freed when the send
    /// completes, or now when it cannot be sent.
    fn send(
        &mut self,
        meta: Meta,
        reply: &Reply<'_>,
        payload: DataBuf,
        pooled: bool,
        token: Option<u32>,
        status: i32,
    ) {
        let ep = self.sessions.endpoint(meta.route.channel);
        let Err(unsent) = self
            .replies
            .send(ep, meta, reply, payload, pooled, token, status)
        else {
            return;
        };
        let start = Instant::now();
        let status = match unsent {
            Unsent::Encode(e, payload) => {
                self.log
                    .line(&format!("cannot encode the reply to {}: {e}", meta.op));
                self.slots.give_back(payload, pooled);
                libc::EIO
            }
            Unsent::NoChannel(payload) => {
                self.stats.replies_dropped += 1;
                self.slots.give_back(payload, pooled);
                status
            }
            Unsent::Failed(e) => {
                if pooled {
                    self.slots.put_buf(Vec::new());
                }
                let msg = format!(
                    "sending the reply to {} {} on channel {} failed: {e}",
                    meta.op, meta.route.request_id, meta.route.channel
                );
                if peer_gone(&e) {
                    self.peers.failed(meta.route.channel, msg, &self.sessions);
                } else {
                    self.log.dropped(&msg);
                }
                e.errno()
            }
        };
        self.finish(token, meta, status, start);
    }

    /// Finished sends free their slot and return their buffer; accepts
    /// sent and sessions' closes that finished are let go.
    pub(super) fn poll_sends(&mut self) -> bool {
        let mut any = self.sessions.poll_accepts(&mut self.log);
        any |= self.sessions.poll_closes(&self.log);
        while let Some(s) = self.replies.sent() {
            any = true;
            let (meta, mut status, start) = s.done;
            match s.result {
                Some(Ok(buf)) => self.slots.give_back(buf, s.pooled),
                Some(Err(e)) => {
                    if s.pooled {
                        self.slots.put_buf(Vec::new());
                    }
                    if status == 0 {
                        status = e.errno();
                    }
                    if peer_gone(&e) {
                        let why = format!("a reply failed: {e}");
                        self.peers.failed(meta.route.channel, why, &self.sessions);
                    } else {
                        self.log.dropped(&format!("sending a reply failed: {e}"));
                    }
                }
                None => {}
            }
            self.finish(s.token, meta, status, start);
        }
        any
    }

    /// A request is over: free its slot and record it.
    fn finish(&mut self, token: Option<u32>, meta: Meta, status: i32, reply_start: Instant) {
        if let Some(t) = token {
            self.slots.release(t);
        }
        self.idle.moved(meta.bytes);
        let ns = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.stats.answered(
            meta.op,
            ns(meta.dispatched.saturating_duration_since(meta.arrival)),
            meta.storage_ns,
            ns(reply_start.saturating_duration_since(meta.arrival)),
        );
        self.replies.record(&meta, status, reply_start);
    }

    /// Frees the channels whose client was found gone this turn.
    pub(super) fn free_dead_channels(&mut self) -> bool {
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
    pub(super) fn check_stalls(&mut self) {
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

    /// The stats JSON document now.
    fn stats_json(&self) -> String {
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
    pub(super) fn stats_foreign_datagrams(&self) -> u64 {
        self.stats.foreign_datagrams
    }

    /// The worker's wake-up sockets had `new` more datagrams from outside
    /// the job (`seen`: all so far): counted, and now and then traced.
    pub(super) fn foreign_signals(&mut self, seen: ForeignSignals, new: u64) {
        self.stats.foreign_datagrams = seen.datagrams;
        self.stats.foreign_wakeups = seen.wakeups;
        self.stats.foreign_sender = (seen.last_uid, seen.last_pid);
        if let Some(n) = self.outsiders.arrived(new) {
            self.replies.record_foreign(n, seen.last_uid, seen.last_pid);
        }
    }

    /// Closes every session, drops what is still pending, writes out the
    /// event log and stops the storage threads; returns what the run did.
    pub(super) fn finish_run(&mut self) -> ServerReport {
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
