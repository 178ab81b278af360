//! The event loop: the one thread that owns the UCX worker.
//!
//! Each turn progresses UCX (handlers only queue the messages), handles
//! what arrived, collects finished receives, storage results and sends,
//! and hands queued requests to free slots. A request holds its slot (and
//! its data buffer) from dispatch until its reply has been sent, so slots
//! bound both the storage work in flight (on the pool or the store's ring)
//! and the buffer memory.
//!
//! A daemon's store is driven by the loop ([`ChunkStore::open_driven`]):
//! each turn ends by turning the store's ring, which submits what the turn
//! started and answers what completed.
//!
//! Idle: after [`SPIN_TIME`] without news (longer after bulk data while a
//! CPU is free: [`super::idle`]) the loop arms the worker and sleeps in
//! epoll on the worker's event fd, the storage pool's and the ring's
//! completion eventfds, a driven store's eventfd and the signal eventfd.
//! The epoll timeout is only a deadline check (once a second, or the
//! drain deadline while stopping).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use benchfs_ucx::{AmMessage, Request, Worker};

use super::ServerConfig;
use super::buffers::BufPool;
use super::channels::Channels;
use super::data_buf::DataBuf;
use super::dispatch::{Failure, Job, Outcome, Storage};
use super::idle::{Idle, IdlePolicy};
use super::on_ring::OnRing;
use super::pool::StoragePool;
use super::requests::unix_now_ns;
use super::sessions::ConnectGate;
use super::signals::{SignalGuard, signal_name};
use super::slots::{Meta, Queued, Receiving, Sending, Slots};
use super::stats::ServerStats;
use crate::error::{Error, Result};
use crate::rpc::session::{AM_REQUEST, AM_SESSION};
use crate::rpc::trace_op;
use crate::rpc::transport::ucx_error;
use crate::rpc::wire::{Limits, Reply, RequestOf};
use crate::storage::ChunkStore;
use crate::sys::Epoll;
use crate::trace::format::{Kind, status_of};
use crate::trace::{Record, TraceBuffer};

/// Spinning turns between two clock reads.
const SPIN_CLOCK_EVERY: u32 = 32;
/// Epoll timeout while serving: only a liveness check, nothing is waited
/// for on a timer.
const IDLE_CHECK: Duration = Duration::from_secs(1);
/// How often stalled channels are looked for.
const STALL_CHECK: Duration = Duration::from_secs(1);
/// Busy turns between two looks at the clock for that check.
const STALL_CLOCK_EVERY: u32 = 1024;
/// How long closing each endpoint may take at disconnect or shutdown.
pub(super) const CLOSE_DEADLINE: Duration = Duration::from_millis(500);
/// Drop log lines: the first few, then one in this many.
const LOG_EVERY: u64 = 1000;
const LOG_FIRST: u64 = 20;

/// Why and how the server stops.
#[derive(Debug, Clone)]
pub(super) struct Stop {
    pub reason: String,
    pub force: bool,
    pub deadline: Instant,
}

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

/// A server: the event loop's state. Build it (handlers set, storage
/// threads started), publish the worker's address, then [`Server::run`].
pub struct Server<'w> {
    pub(super) worker: &'w Worker,
    pub(super) cfg: ServerConfig,
    pub(super) store: Arc<ChunkStore>,
    pub(super) chunk_size: u64,
    pub(super) limits: Limits,
    pub(super) inbox: Rc<RefCell<VecDeque<AmMessage>>>,
    pub(super) channels: Channels,
    pub(super) queue: VecDeque<Queued>,
    pub(super) slots: Slots,
    pub(super) receiving: Vec<Receiving>,
    pub(super) sends: Vec<Sending>,
    pub(super) pool: StoragePool,
    /// Data requests started on the store's ring by the loop itself.
    pub(super) on_ring: OnRing,
    /// What the pool runs jobs with (the namespace's size, for the stats).
    pub(super) storage: Arc<Storage>,
    pub(super) bufs: BufPool,
    pub(super) stats: ServerStats,
    pub(super) trace: Option<TraceBuffer>,
    pub(super) scratch: Vec<u8>,
    pub(super) stop: Option<Stop>,
    pub(super) drops_logged: u64,
    /// First byte of this worker's address (see `plausible_address`).
    pub(super) address_header: u8,
    /// Nonces of recent connects (replays are refused).
    pub(super) nonces: super::replay::NonceCache,
    /// Channels whose client was found gone this turn, and why.
    pub(super) dead: Vec<(u16, String)>,
    /// When an idle spell stops spinning.
    pub(super) idle: IdlePolicy,
}

impl std::fmt::Debug for Server<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("node_id", &self.cfg.node_id)
            .field("node_name", &self.cfg.node_name)
            .field("channels", &self.channels.open_count())
            .field("queued", &self.queue.len())
            .field("in_flight", &self.slots.len())
            .finish()
    }
}

impl<'w> Server<'w> {
    /// Sets the worker's handlers for requests and session messages and
    /// starts the storage threads. The worker's address can be published
    /// as soon as this returns: messages queue until [`Server::run`].
    pub fn new(
        worker: &'w Worker,
        store: Arc<ChunkStore>,
        cfg: ServerConfig,
    ) -> Result<Server<'w>> {
        cfg.validate()?;
        let chunk_size = store.chunk_size();
        let fsync_each = cfg.durability == super::Durability::FsyncEachWrite;
        let storage = Arc::new(Storage::new(Arc::clone(&store), fsync_each, cfg.node_id));
        let pool = StoragePool::start(Arc::clone(&storage), cfg.max_concurrency)?;
        let inbox: Rc<RefCell<VecDeque<AmMessage>>> = Rc::new(RefCell::new(VecDeque::new()));
        let gate = ConnectGate {
            key: cfg.session_key.clone(),
            node_id: cfg.node_id,
            node_name: cfg.node_name.clone(),
            chunk_size,
        };
        let sessions = Rc::clone(&inbox);
        worker
            .set_am_handler(AM_SESSION, move |msg| {
                gate.answer_forged(&msg);
                sessions.borrow_mut().push_back(msg);
            })
            .map_err(|e| ucx_error(&e, "set active message handler"))?;
        let requests = Rc::clone(&inbox);
        worker
            .set_am_handler(AM_REQUEST, move |msg| requests.borrow_mut().push_back(msg))
            .map_err(|e| ucx_error(&e, "set active message handler"))?;
        let limits = Limits {
            // A write never carries more than a chunk, a read never asks
            // for more: a larger length is a lie, refused while decoding.
            max_payload: chunk_size,
            ..Limits::default()
        };
        let trace = cfg.trace.clone().map(TraceBuffer::new);
        let own = worker
            .address()
            .map_err(|e| ucx_error(&e, "UCX worker address"))?;
        let address_header = own.as_bytes().first().copied().unwrap_or(0);
        Ok(Server {
            worker,
            store,
            chunk_size,
            limits,
            inbox,
            channels: Channels::new(cfg.max_channels),
            queue: VecDeque::new(),
            slots: Slots::default(),
            receiving: Vec::new(),
            sends: Vec::new(),
            pool,
            on_ring: OnRing::new()?,
            storage,
            bufs: BufPool::new(cfg.max_concurrency),
            stats: ServerStats::new(),
            trace,
            scratch: Vec::with_capacity(256),
            stop: None,
            drops_logged: 0,
            address_header,
            nonces: super::replay::NonceCache::default(),
            dead: Vec::new(),
            idle: IdlePolicy::new(cfg.bulk_spin),
            cfg,
        })
    }

    /// Serves until a stop signal (when `signals` is given) or a shutdown
    /// request, then drains (bounded by the shutdown deadline), closes
    /// every session and returns the counters.
    pub fn run(mut self, signals: Option<&SignalGuard>) -> Result<ServerReport> {
        let result = self.serve(signals);
        self.teardown();
        result?;
        let drained = self.drained();
        let stop = self.stop.clone();
        Ok(ServerReport {
            stats: self.stats.clone(),
            stop_reason: stop
                .as_ref()
                .map_or_else(|| "error".to_owned(), |s| s.reason.clone()),
            forced: stop.is_some_and(|s| s.force),
            drained,
            channels_opened: self.channels.opened_total(),
            buffer_grows: self.bufs.grows(),
            buffers: self.bufs.live(),
        })
    }

    /// A log line on stderr, prefixed with the daemon's name.
    pub(super) fn log(&self, msg: &str) {
        crate::log_line!("benchfs daemon {}: {msg}", self.cfg.node_name);
    }

    /// A log line about a dropped or refused message; a flood is thinned
    /// to one line in [`LOG_EVERY`].
    pub(super) fn log_drop(&mut self, msg: &str) {
        self.drops_logged += 1;
        let n = self.drops_logged;
        if n <= LOG_FIRST || n.is_multiple_of(LOG_EVERY) {
            self.log(&format!("{msg} ({n} refused so far)"));
        }
    }

    pub(super) fn stopping(&self) -> bool {
        self.stop.is_some()
    }

    fn drained(&self) -> bool {
        self.queue.is_empty()
            && self.slots.len() == 0
            && self.receiving.is_empty()
            && self.sends.is_empty()
    }

    fn serve(&mut self, signals: Option<&SignalGuard>) -> Result<()> {
        let epoll_err = |e: std::io::Error| Error::from_io(&e, "epoll", "event loop");
        let epoll = Epoll::new().map_err(epoll_err)?;
        let worker_fd = self
            .worker
            .event_fd()
            .map_err(|e| ucx_error(&e, "UCX worker event fd"))?;
        epoll.add(worker_fd, 0).map_err(epoll_err)?;
        epoll.add(self.pool.wake().raw(), 1).map_err(epoll_err)?;
        epoll
            .add(self.on_ring.done.wake().raw(), 3)
            .map_err(epoll_err)?;
        if let Some(s) = signals {
            epoll.add(s.fd(), 2).map_err(epoll_err)?;
        }
        let store = Arc::clone(&self.store);
        if let Some(w) = store.driven_wake() {
            epoll.add(w.raw(), 4).map_err(epoll_err)?;
        }
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 5];
        let mut idle = 0u32;
        let mut idle_since = Instant::now();
        let mut next = Idle::Spin;
        let mut turns = 0u32;
        let mut next_stall_check = Instant::now() + STALL_CHECK;
        loop {
            turns = turns.wrapping_add(1);
            if turns.is_multiple_of(STALL_CLOCK_EVERY) {
                self.check_stalls(&mut next_stall_check);
            }
            let mut busy = self.worker.progress() > 0;
            busy |= self.handle_inbox();
            busy |= self.poll_receiving();
            busy |= self.drain_completions();
            busy |= self.poll_sends();
            busy |= self.free_dead_channels();
            busy |= self.dispatch();
            // A driven store: what the turn started goes to the kernel now.
            busy |= store.drive();
            if let Some(sig) = signals.and_then(SignalGuard::received)
                && self.stop.is_none()
            {
                self.begin_stop(signal_name(sig).to_owned(), false);
            }
            if let Some(stop) = &self.stop {
                if self.drained() {
                    return Ok(());
                }
                if Instant::now() >= stop.deadline {
                    let msg = format!(
                        "drain deadline passed with {} queued and {} in flight",
                        self.queue.len(),
                        self.slots.len()
                    );
                    self.log(&msg);
                    return Ok(());
                }
            }
            if busy {
                idle = 0;
                continue;
            }
            if idle == 0 {
                idle_since = Instant::now();
                next = Idle::Spin;
            }
            idle += 1;
            // Spin for a bounded time, reading the clock now and then.
            if idle.is_multiple_of(SPIN_CLOCK_EVERY) {
                next = self.idle.next(idle_since, &mut self.stats);
            }
            match next {
                Idle::Spin => {
                    std::hint::spin_loop();
                    continue;
                }
                Idle::Yield => {
                    std::thread::yield_now();
                    continue;
                }
                Idle::Sleep => {}
            }
            idle = 0;
            self.idle.sleeping();
            // Before sleeping (at least once per IDLE_CHECK when idle).
            self.check_stalls(&mut next_stall_check);
            self.park();
            if let Some(w) = store.driven_wake() {
                // Drained before the last look: a completion from here on
                // writes it again.
                w.drain();
            }
            if store.drive() | self.drain_completions() {
                self.unpark();
                continue;
            }
            if !self
                .worker
                .arm()
                .map_err(|e| ucx_error(&e, "arm the UCX worker"))?
            {
                self.unpark();
                continue;
            }
            let timeout = match &self.stop {
                Some(s) => s.deadline.saturating_duration_since(Instant::now()),
                None => IDLE_CHECK,
            };
            epoll.wait(&mut events, timeout).map_err(epoll_err)?;
            self.unpark();
            if let Some(s) = signals {
                s.drain();
            }
        }
    }

    /// Announces a sleep to everyone who may send the loop a result; look
    /// for results once more after this, then sleep.
    fn park(&self) {
        self.pool.wake().park();
        self.on_ring.done.wake().park();
        if let Some(w) = self.store.driven_wake() {
            w.park();
        }
    }

    fn unpark(&self) {
        self.pool.wake().unpark();
        self.on_ring.done.wake().unpark();
        if let Some(w) = self.store.driven_wake() {
            w.unpark();
        }
    }

    /// Frees stalled channels when the check is due.
    fn check_stalls(&mut self, next: &mut Instant) {
        let now = Instant::now();
        if now >= *next {
            *next = now + STALL_CHECK;
            self.free_stalled_channels(now);
        }
    }

    /// Handles every queued message.
    fn handle_inbox(&mut self) -> bool {
        let mut any = false;
        loop {
            // Take one at a time: handling may progress the worker (closing
            // an endpoint), whose handlers push to the inbox.
            let msg = self.inbox.borrow_mut().pop_front();
            let Some(msg) = msg else { return any };
            any = true;
            match msg.id() {
                AM_SESSION => self.on_session(&msg),
                _ => self.on_request(msg),
            }
        }
    }

    /// Starts stopping: no new sessions or work; queued requests drain
    /// (or, forced, are refused).
    pub(super) fn begin_stop(&mut self, reason: String, force: bool) {
        match &mut self.stop {
            Some(s) => s.force |= force,
            None => {
                let deadline = crate::deadline::after(self.cfg.shutdown_deadline);
                let msg = format!(
                    "stopping ({reason}{}): {} queued, {} in flight, drain deadline {:.1} s",
                    if force { ", forced" } else { "" },
                    self.queue.len(),
                    self.slots.len(),
                    self.cfg.shutdown_deadline.as_secs_f64()
                );
                self.log(&msg);
                self.stop = Some(Stop {
                    reason,
                    force,
                    deadline,
                });
            }
        }
        if force {
            while let Some(q) = self.queue.pop_front() {
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
    fn dispatch(&mut self) -> bool {
        let mut any = false;
        while self.slots.len() < self.cfg.max_concurrency {
            let Some(front) = self.queue.front() else {
                break;
            };
            let Some(mut buf) = self.bufs.take(front.need) else {
                break;
            };
            let Some(mut q) = self.queue.pop_front() else {
                break;
            };
            any = true;
            q.meta.dispatched = Instant::now();
            let token = self.slots.insert(q.meta);
            self.stats.in_flight_peak = self.stats.in_flight_peak.max(self.slots.len());
            q.job.token = token;
            match q.msg {
                Some(msg) if msg.is_rndv() => {
                    // A write the ring will take is received straight into
                    // the registered buffer it is written from; the slot's
                    // pool vector waits idle in the job meanwhile.
                    match self.storage.write_buf(&q.job, msg.len()) {
                        Some(fixed) => {
                            q.job.buf = buf;
                            self.receive(msg, DataBuf::Fixed(fixed), q.job);
                        }
                        None => self.receive(msg, DataBuf::Heap(buf), q.job),
                    }
                }
                Some(msg) => {
                    // Eager data must be copied out of UCX's buffer: a
                    // write the ring will take is copied once, straight
                    // into the registered buffer it is written from.
                    let data = msg.data().unwrap_or(&[]);
                    let fixed = if data.is_empty() {
                        None
                    } else {
                        self.storage.write_buf(&q.job, data.len())
                    };
                    match fixed {
                        Some(mut fixed) => {
                            fixed.fill_from(data);
                            q.job.fixed = Some(fixed);
                        }
                        None => buf.extend_from_slice(data),
                    }
                    drop(msg);
                    q.job.buf = buf;
                    self.submit(q.job);
                }
                None => {
                    q.job.buf = buf;
                    self.submit(q.job);
                }
            }
        }
        any
    }

    /// Starts receiving a write's rendezvous data into `into`.
    fn receive(&mut self, msg: AmMessage, into: DataBuf, mut job: Job) {
        match msg.recv_into(into) {
            Ok(req) => self.receiving.push(Receiving { req, job }),
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
            self.complete(outcome);
            return;
        }
        let job = match self.on_ring.start(&self.storage, job) {
            Ok(()) => {
                self.stats.data_on_ring += 1;
                return;
            }
            Err(job) => job,
        };
        if let Err(mut job) = self.pool.submit(job) {
            let buf = std::mem::take(&mut job.buf);
            self.fail_now(&job, "storage pool stopped", buf);
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

    /// Writes whose data has arrived go to the storage threads.
    fn poll_receiving(&mut self) -> bool {
        let mut any = false;
        let mut i = 0;
        while i < self.receiving.len() {
            if !self.receiving[i].req.is_done() {
                i += 1;
                continue;
            }
            any = true;
            let Receiving { req, job } = self.receiving.swap_remove(i);
            self.received(req, job);
        }
        any
    }

    /// A write whose data has arrived (or failed to) goes to storage.
    fn received(&mut self, req: Request<DataBuf>, mut job: Job) {
        {
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
                    if super::peers::peer_gone(&e)
                        && let Some(m) = self.slots.get_mut(job.token)
                    {
                        let channel = m.route.channel;
                        self.peer_failed(channel, why.clone());
                    }
                    let buf = std::mem::take(&mut job.buf);
                    self.fail_now(&job, &why, buf);
                }
            }
        }
    }

    fn drain_completions(&mut self) -> bool {
        let mut any = false;
        while let Some(o) = self.pool.try_complete() {
            any = true;
            self.complete(o);
        }
        while let Some(r) = self.on_ring.try_complete() {
            any = true;
            match r {
                Ok(o) => self.complete(o),
                Err(buf) => self.bufs.put(buf),
            }
        }
        any
    }

    /// Finished sends free their slot and return their buffer.
    fn poll_sends(&mut self) -> bool {
        let mut any = false;
        let mut i = 0;
        while i < self.sends.len() {
            if !self.sends[i].req.is_done() {
                i += 1;
                continue;
            }
            any = true;
            let s = self.sends.swap_remove(i);
            let mut status = s.done.map_or(0, |d| d.1);
            match s.req.try_take() {
                Ok(Ok(buf)) => self.give_back(buf, s.pooled),
                Ok(Err(e)) => {
                    if s.pooled {
                        self.bufs.put(Vec::new());
                    }
                    if status == 0 {
                        status = e.errno();
                    }
                    if let Some((m, _, _)) = s.done
                        && super::peers::peer_gone(&e)
                    {
                        self.peer_failed(m.route.channel, format!("a reply failed: {e}"));
                    } else {
                        let msg = format!("sending a reply failed: {e}");
                        self.log_drop(&msg);
                    }
                }
                Err(_) => {}
            }
            self.finish(s.token, s.done.map(|(m, _, t)| (m, status, t)));
        }
        any
    }

    /// A request is over: free its slot and record it.
    pub(super) fn finish(&mut self, token: Option<u32>, done: Option<(Meta, i32, Instant)>) {
        if let Some(t) = token {
            self.slots.remove(t);
        }
        if let Some((m, _, _)) = &done {
            self.idle.moved(m.bytes);
        }
        if let (Some(trace), Some((m, status, reply_start))) = (&mut self.trace, done) {
            let now = Instant::now();
            let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            trace.push(&Record {
                t_ns: trace.t_ns(now),
                kind: Kind::RpcServer as u8,
                op: trace_op(m.op) as u8,
                node: u16::try_from(self.cfg.node_id).unwrap_or(u16::MAX),
                status: status_of(status),
                retries: 0,
                bytes: m.bytes,
                d0: ns(m.dispatched.saturating_duration_since(m.arrival)),
                d1: m.storage_ns,
                d2: ns(now.saturating_duration_since(reply_start)),
            });
        }
    }

    /// Closes every session, drops what is still pending and detaches the
    /// handlers (they hold the inbox, which holds messages of the worker).
    fn teardown(&mut self) {
        let deadline = Instant::now() + CLOSE_DEADLINE.max(Duration::from_secs(1));
        for ch in self.channels.drain() {
            if let Err(e) = ch.ep.close(deadline) {
                let msg = format!("closing the session of {}: {e}", ch.client_name);
                self.log(&msg);
            }
        }
        self.queue.clear();
        self.receiving.clear();
        self.sends.clear();
        self.on_ring.clear();
        for id in [AM_REQUEST, AM_SESSION] {
            let _ = self.worker.clear_am_handler(id);
        }
        self.inbox.borrow_mut().clear();
        // The storage threads' calls wait for a driven ring's turns.
        let store = Arc::clone(&self.store);
        let joined = self.pool.stop(Instant::now() + Duration::from_secs(1), || {
            store.drive();
        });
        if !joined {
            self.log("storage threads still busy at shutdown; left to finish");
        }
        if let Some(t) = &mut self.trace {
            t.flush();
        }
    }
}
