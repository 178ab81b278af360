//! The event loop: the one thread that owns the UCX worker, and the only
//! module that knows every part of the server.
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
//! Idle: after [`SPIN_TIME`](super::SPIN_TIME) without news (longer after
//! bulk data while a CPU is free: `idle`) the loop arms the worker and
//! sleeps in epoll on the worker's event fd, the storage pool's and the
//! ring's completion eventfds, a driven store's eventfd and the signal
//! eventfd. The epoll timeout is only a deadline check (once a second, or
//! the drain deadline while stopping).
//!
//! A wake-up that brought only datagrams from other users on the
//! shared-memory transports' wake-up sockets (`Worker::woke`) sends the
//! loop back to sleep without its spin, and is counted in the stats and
//! traced (`foreign_signal`): interference from outside the job.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use benchfs_ucx::{AmMessage, Worker};

use super::config::ServerConfig;
use super::idle::Idle;
use super::router::Router;
use super::signals::{SignalGuard, signal_name};
use super::stats::ServerReport;
use crate::error::{Error, Result};
use crate::rpc::session::{AM_REQUEST, AM_SESSION};
use crate::rpc::transport::ucx_error;
use crate::storage::ChunkStore;
use crate::sys::Epoll;

/// Epoll timeout while serving: only a liveness check, nothing is waited
/// for on a timer.
const IDLE_CHECK: Duration = Duration::from_secs(1);
/// Busy turns between two looks at the clock for the stall check.
const STALL_CLOCK_EVERY: u32 = 1024;

/// A server: the event loop over its parts (`Router`). Build it
/// (handlers set, storage threads started), publish the worker's address,
/// then [`Server::run`].
pub struct Server<'w> {
    worker: &'w Worker,
    /// What the worker's handlers queue, handled in the loop's turn.
    inbox: Rc<RefCell<VecDeque<AmMessage>>>,
    router: Router,
}

impl std::fmt::Debug for Server<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("router", &self.router)
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
        let own = worker
            .address()
            .map_err(|e| ucx_error(&e, "UCX worker address"))?;
        let address_header = own.as_bytes().first().copied().unwrap_or(0);
        let router = Router::new(store, cfg, address_header)?;
        let inbox: Rc<RefCell<VecDeque<AmMessage>>> = Rc::new(RefCell::new(VecDeque::new()));
        let gate = router.gate();
        let to_inbox = Rc::clone(&inbox);
        worker
            .set_am_handler(AM_SESSION, move |msg| {
                gate.answer_forged(&msg);
                to_inbox.borrow_mut().push_back(msg);
            })
            .map_err(|e| ucx_error(&e, "set active message handler"))?;
        let to_inbox = Rc::clone(&inbox);
        worker
            .set_am_handler(AM_REQUEST, move |msg| to_inbox.borrow_mut().push_back(msg))
            .map_err(|e| ucx_error(&e, "set active message handler"))?;
        Ok(Server {
            worker,
            inbox,
            router,
        })
    }

    /// Serves until a stop signal (when `signals` is given) or a shutdown
    /// request, then drains (bounded by the shutdown deadline), closes
    /// every session and returns the counters.
    pub fn run(mut self, signals: Option<&SignalGuard>) -> Result<ServerReport> {
        let result = self.serve(signals);
        // Datagrams read at the last arm, after the last wake-up.
        let seen = self.worker.foreign_signals();
        let new = seen
            .datagrams
            .saturating_sub(self.router.stats_foreign_datagrams());
        self.router.foreign_signals(seen, new);
        // The handlers hold the inbox, which holds messages of the worker.
        for id in [AM_REQUEST, AM_SESSION] {
            let _ = self.worker.clear_am_handler(id);
        }
        self.inbox.borrow_mut().clear();
        let report = self.router.finish_run();
        result.map(|()| report)
    }

    fn serve(&mut self, signals: Option<&SignalGuard>) -> Result<()> {
        let epoll_err = |e: std::io::Error| Error::from_io(&e, "epoll", "event loop");
        let epoll = Epoll::new().map_err(epoll_err)?;
        let worker_fd = self
            .worker
            .event_fd()
            .map_err(|e| ucx_error(&e, "UCX worker event fd"))?;
        epoll.add(worker_fd, 0).map_err(epoll_err)?;
        for fd in self.router.storage().wake_fds() {
            epoll.add(fd, 1).map_err(epoll_err)?;
        }
        if let Some(s) = signals {
            epoll.add(s.fd(), 2).map_err(epoll_err)?;
        }
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 5];
        let mut turns = 0u32;
        // Woken by outsiders only: sleep again without spinning.
        let mut sleep_now = false;
        loop {
            turns = turns.wrapping_add(1);
            if turns.is_multiple_of(STALL_CLOCK_EVERY) {
                self.router.check_stalls();
            }
            let mut busy = self.worker.progress() > 0;
            busy |= self.handle_inbox();
            let r = &mut self.router;
            busy |= r.poll_receiving();
            busy |= r.drain_completions();
            busy |= r.poll_sends();
            busy |= r.free_dead_channels();
            busy |= r.dispatch();
            // A driven store: what the turn started goes to the kernel now.
            busy |= r.storage().drive();
            if let Some(sig) = signals.and_then(SignalGuard::received)
                && r.stop_deadline().is_none()
            {
                r.begin_stop(signal_name(sig).to_owned(), false);
            }
            if let Some(deadline) = r.stop_deadline() {
                if r.drained() {
                    return Ok(());
                }
                if Instant::now() >= deadline {
                    let (queued, in_flight) = r.load();
                    r.log().line(&format!(
                        "drain deadline passed with {queued} queued and {in_flight} in flight"
                    ));
                    return Ok(());
                }
            }
            if busy {
                r.busy();
                sleep_now = false;
                continue;
            }
            let idle = if sleep_now {
                Idle::Sleep
            } else {
                r.idle_turn()
            };
            // Spin for a bounded time, reading the clock now and then.
            match idle {
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
            r.sleeping();
            // Before sleeping (at least once per IDLE_CHECK when idle).
            r.check_stalls();
            // Announced first: a result from here on wakes the loop.
            r.storage().park();
            r.storage().rearm();
            if r.storage().drive() | r.drain_completions() {
                r.storage().unpark();
                continue;
            }
            if !self
                .worker
                .arm()
                .map_err(|e| ucx_error(&e, "arm the UCX worker"))?
            {
                self.router.storage().unpark();
                sleep_now = false;
                continue;
            }
            let timeout = match self.router.stop_deadline() {
                Some(d) => d.saturating_duration_since(Instant::now()),
                None => IDLE_CHECK,
            };
            // A request held in the queue wakes the loop when it is due.
            let timeout = match self.router.held_for() {
                Some(held) => timeout.min(held),
                None => timeout,
            };
            let woken = epoll.wait(&mut events, timeout).map_err(epoll_err)?;
            self.router.storage().unpark();
            if woken > 0 {
                let d = self.worker.woke();
                sleep_now = d.foreign > 0 && d.own == 0;
                let seen = self.worker.foreign_signals();
                let new = seen
                    .datagrams
                    .saturating_sub(self.router.stats_foreign_datagrams());
                if new > 0 {
                    self.router.foreign_signals(seen, new);
                }
            }
            if let Some(s) = signals {
                s.drain();
            }
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
                AM_SESSION => self.router.on_session(&msg, self.worker),
                _ => self.router.on_request(msg),
            }
        }
    }
}
