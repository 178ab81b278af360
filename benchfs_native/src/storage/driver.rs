//! The ring and its submit loop.
//!
//! A [`Driver`] owns one io_uring ring (set up with `SINGLE_ISSUER` +
//! `DEFER_TASKRUN`, else `COOP_TASKRUN`), registers a [`BufferPool`] as
//! fixed buffers, and keeps every operation it accepted in a slot table
//! until the kernel posts its completion. Operations are never waited for
//! with timers:
//!
//! * [`Driver::push`] queues an operation; it goes into the SQ at once if
//!   there is room (SQ not full, fewer operations in the kernel than the CQ
//!   holds), else into a backlog that drains as completions free room.
//! * [`Driver::submit_and_wait`] submits everything queued since the last
//!   call in one `io_uring_enter` (the batch size is the io_depth, counted
//!   and traced) and waits for at least one completion, or, with
//!   [`Driver::set_wake_fd`], for the eventfd the driver polls through the
//!   ring itself: so a single wait covers completions and new requests.
//! * [`Driver::reap`] hands completions back with their operation, so
//!   buffers return to their owner only after the kernel is done with them.
//!
//! * [`Driver::poll`] submits and takes what has completed without
//!   waiting, for an owner that sleeps elsewhere (in epoll, woken through
//!   [`Driver::register_eventfd`]).
//!
//! The store runs this on its own thread or on the daemon's event loop;
//! the bulk benchmark drives the very same methods inline on the calling
//! thread.
//!
//! Dropping a driver waits for every operation in the kernel before any
//! buffer is released (no use-after-free); operations still in the backlog
//! never reached the kernel and are dropped.

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use io_uring::{IoUring, Probe, cqueue};

use super::buffer::BufferPool;
use super::ops::{Ftruncate, Op, PollEventfd};
use super::stats::{Counters, bump};
use crate::trace::{Kind, OpCode, Record, TraceBuffer, format::status_of};

/// User data of the eventfd poll's completions.
const WAKE_TOKEN: u64 = u64::MAX;
/// Marker of the eventfd poll in the list of unsubmitted SQEs.
const WAKE_SLOT: u32 = u32::MAX;

/// How the ring was set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingSetup {
    /// `IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN`.
    DeferTaskrun,
    /// `IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN`.
    CoopTaskrun,
    /// `IORING_SETUP_COOP_TASKRUN`.
    CoopOnly,
    /// No flags.
    Plain,
}

impl RingSetup {
    /// The setup flags, as the kernel names them.
    pub fn flags(self) -> &'static str {
        match self {
            RingSetup::DeferTaskrun => "SINGLE_ISSUER|DEFER_TASKRUN",
            RingSetup::CoopTaskrun => "SINGLE_ISSUER|COOP_TASKRUN",
            RingSetup::CoopOnly => "COOP_TASKRUN",
            RingSetup::Plain => "no setup flags",
        }
    }
}

/// One finished operation.
#[derive(Debug)]
pub struct Completion<T> {
    /// What the pusher attached.
    pub token: T,
    /// The operation with its resources (a read's buffer has its length
    /// set to the bytes read).
    pub op: Op,
    /// The CQE result: bytes or 0 on success, `-errno` on failure.
    pub result: i32,
    /// From submission to completion.
    pub latency_ns: u64,
    /// From [`Driver::push`] to submission.
    pub queue_ns: u64,
}

struct Slot<T> {
    op: Op,
    token: T,
    queued_at: Instant,
    submitted_at: Instant,
}

struct Pending<T> {
    op: Op,
    token: T,
    queued_at: Instant,
}

/// A ring plus the operations it carries. `T` is what the owner attaches
/// to each operation to route its completion.
pub struct Driver<T> {
    // Declared first so it is dropped (and the buffers unregistered) first.
    ring: IoUring,
    slots: Vec<Option<Slot<T>>>,
    free_slots: Vec<u32>,
    backlog: VecDeque<Pending<T>>,
    /// Slot ids (or `WAKE_SLOT`) in the SQ, not yet submitted, in order.
    unsubmitted: Vec<u32>,
    /// Operations in the SQ or in the kernel.
    in_kernel: usize,
    max_in_kernel: usize,
    wake: Option<PollEventfd>,
    wake_armed: bool,
    woken: bool,
    counters: Arc<Counters>,
    trace: Option<TraceBuffer>,
    node_id: u16,
    setup: RingSetup,
    ftruncate: bool,
    // Keeps the registered memory alive; dropped after `ring`.
    pool: Option<BufferPool>,
}

impl<T> fmt::Debug for Driver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("setup", &self.setup)
            .field("in_kernel", &self.in_kernel)
            .field("backlog", &self.backlog.len())
            .finish()
    }
}

type Configure = fn(&mut io_uring::Builder);

fn build_ring(entries: u32) -> io::Result<(IoUring, RingSetup)> {
    let attempts: [(RingSetup, Configure); 4] = [
        // TASKRUN_FLAG: the kernel flags deferred completions in the SQ
        // ring, so `poll` enters only when there are some.
        (RingSetup::DeferTaskrun, |b| {
            b.setup_single_issuer()
                .setup_defer_taskrun()
                .setup_taskrun_flag();
        }),
        (RingSetup::CoopTaskrun, |b| {
            b.setup_single_issuer()
                .setup_coop_taskrun()
                .setup_taskrun_flag();
        }),
        (RingSetup::CoopOnly, |b| {
            b.setup_coop_taskrun().setup_taskrun_flag();
        }),
        (RingSetup::Plain, |_| {}),
    ];
    let mut last = io::Error::from_raw_os_error(libc::EINVAL);
    for (setup, configure) in attempts {
        let mut b = IoUring::builder();
        configure(&mut b);
        match b.build(entries) {
            Ok(ring) => return Ok((ring, setup)),
            // Unknown flags: try the next, older setup.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Why [`Driver::new`] failed, and at which step.
#[derive(Debug)]
pub struct SetupError {
    /// What was being done.
    pub step: &'static str,
    /// The kernel's error.
    pub source: io::Error,
}

impl<T> Driver<T> {
    /// A ring of `entries` SQ entries (a power of two, 1..=32768), with
    /// `pool` registered as its fixed buffers. Build it on the thread that
    /// will use it (the ring is single-issuer).
    pub fn new(
        entries: u32,
        pool: Option<&BufferPool>,
        counters: Arc<Counters>,
        trace: Option<TraceBuffer>,
    ) -> Result<Driver<T>, SetupError> {
        let (ring, setup) = build_ring(entries).map_err(|source| SetupError {
            step: "set up io_uring",
            source,
        })?;
        let mut probe = Probe::new();
        let ftruncate = ring.submitter().register_probe(&mut probe).is_ok()
            && probe.is_supported(Ftruncate::CODE);
        if let Some(pool) = pool {
            let iovecs = pool.iovecs();
            // Safety: the iovecs describe the pool's mapping, which stays
            // mapped while the driver holds `pool` (a field dropped after
            // `ring`, whose close unregisters the buffers).
            unsafe { ring.submitter().register_buffers(&iovecs) }.map_err(|source| SetupError {
                step: "register io_uring buffers (limited by RLIMIT_MEMLOCK unless root)",
                source,
            })?;
        }
        let max_in_kernel = ring.params().cq_entries() as usize;
        let node_id = trace.as_ref().map_or(0, TraceBuffer::node_id);
        Ok(Driver {
            ring,
            slots: Vec::new(),
            free_slots: Vec::new(),
            backlog: VecDeque::new(),
            unsubmitted: Vec::new(),
            in_kernel: 0,
            max_in_kernel,
            wake: None,
            wake_armed: false,
            woken: false,
            counters,
            trace,
            node_id,
            setup,
            ftruncate,
            pool: pool.cloned(),
        })
    }

    /// How the ring was set up.
    pub fn setup(&self) -> RingSetup {
        self.setup
    }

    /// Whether the kernel does `IORING_OP_FTRUNCATE`.
    pub fn supports_ftruncate(&self) -> bool {
        self.ftruncate
    }

    /// The registered pool.
    pub fn pool(&self) -> Option<&BufferPool> {
        self.pool.as_ref()
    }

    /// The counters this driver updates.
    pub fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// Operations accepted and not yet completed (backlog, SQ and kernel).
    pub fn in_flight(&self) -> usize {
        self.in_kernel + self.backlog.len()
    }

    /// Poll `fd` (an eventfd) through the ring: a write to it ends
    /// [`Driver::submit_and_wait`]; [`Driver::take_woken`] tells. The owner
    /// keeps `fd` open for the driver's lifetime.
    pub fn set_wake_fd(&mut self, fd: RawFd) {
        self.wake = Some(PollEventfd { fd });
    }

    /// Whether the wake eventfd fired since the last call.
    pub fn take_woken(&mut self) -> bool {
        std::mem::take(&mut self.woken)
    }

    /// Queues `op`; it reaches the kernel with the next submit. Never
    /// fails: without room in the SQ it waits in a backlog.
    #[inline]
    pub fn push(&mut self, op: Op, token: T, queued_at: Instant) {
        match op.direct() {
            Some(true) => bump(&self.counters.direct_ops, 1),
            Some(false) => bump(&self.counters.buffered_ops, 1),
            None => {}
        }
        self.backlog.push_back(Pending {
            op,
            token,
            queued_at,
        });
        self.fill_sq();
    }

    /// Moves backlog into the SQ while there is room in the SQ and the CQ.
    fn fill_sq(&mut self) {
        let mut sq = self.ring.submission();
        if let Some(wake) = self.wake
            && !self.wake_armed
            && !sq.is_full()
        {
            let entry = wake.entry().user_data(WAKE_TOKEN);
            // Safety: the poll SQE refers to no memory, only to the eventfd,
            // which the owner keeps open while the driver lives.
            if unsafe { sq.push(&entry) }.is_ok() {
                self.unsubmitted.push(WAKE_SLOT);
                self.wake_armed = true;
            }
        }
        while self.in_kernel < self.max_in_kernel && !sq.is_full() {
            let Some(p) = self.backlog.pop_front() else {
                break;
            };
            let id = match self.free_slots.pop() {
                Some(id) => id,
                None => {
                    self.slots.push(None);
                    (self.slots.len() - 1) as u32
                }
            };
            let slot = self.slots[id as usize].insert(Slot {
                op: p.op,
                token: p.token,
                queued_at: p.queued_at,
                submitted_at: p.queued_at,
            });
            let entry = slot.op.entry().user_data(u64::from(id));
            // Safety: every pointer in the entry refers to heap or pool
            // memory owned by `slot.op` (ops/mod.rs), which stays in
            // `slots[id]` until `reap` sees this entry's completion; the
            // descriptors are held open by the op's `Arc<OwnedFd>`s.
            // `sq` is not full, so the push succeeds.
            if unsafe { sq.push(&entry) }.is_err() {
                // Not reachable (checked `is_full`); keep the op queued.
                if let Some(s) = self.slots[id as usize].take() {
                    self.backlog.push_front(Pending {
                        op: s.op,
                        token: s.token,
                        queued_at: s.queued_at,
                    });
                }
                self.free_slots.push(id);
                break;
            }
            self.unsubmitted.push(id);
            self.in_kernel += 1;
        }
    }

    /// Submits what is queued in one `io_uring_enter` and waits until at
    /// least `want` completions (the wake poll's included) are ready, or
    /// returns at once when nothing could complete. Returns the number of
    /// operations submitted.
    pub fn submit_and_wait(&mut self, want: usize) -> io::Result<usize> {
        let submitted = self.submit_full_batches()?;
        let can_complete = self.in_kernel > 0 || self.wake_armed;
        let want = if can_complete { want } else { 0 };
        if want == 0 && self.unsubmitted.is_empty() {
            return Ok(submitted);
        }
        Ok(submitted + self.enter(want)?)
    }

    /// Submits what is queued and lets the kernel post the completions it
    /// holds back (`DEFER_TASKRUN`), without waiting: a system call only
    /// when there is something to submit or the kernel flags such
    /// completions. Take them with [`Driver::reap`].
    pub fn poll(&mut self) -> io::Result<usize> {
        let submitted = self.submit_full_batches()?;
        if self.unsubmitted.is_empty() && !self.ring.submission().taskrun() {
            return Ok(submitted);
        }
        Ok(submitted + self.enter(0)?)
    }

    /// Has the kernel write `fd` (an eventfd) when completions arrive, for
    /// an owner that sleeps in epoll rather than in the ring. The owner
    /// keeps `fd` open for the driver's lifetime.
    pub fn register_eventfd(&self, fd: RawFd) -> io::Result<()> {
        self.ring.submitter().register_eventfd(fd)
    }

    /// Moves the backlog into the SQ; while more is queued than the SQ
    /// holds, submits full batches as they fill.
    fn submit_full_batches(&mut self) -> io::Result<usize> {
        let mut submitted = 0;
        self.fill_sq();
        while !self.backlog.is_empty()
            && self.in_kernel < self.max_in_kernel
            && self.ring.submission().is_full()
        {
            submitted += self.enter(0)?;
            self.fill_sq();
        }
        Ok(submitted)
    }

    fn enter(&mut self, want: usize) -> io::Result<usize> {
        let pending = self.unsubmitted.len();
        let t0 = Instant::now();
        let res = self.ring.submit_and_wait(want);
        let t1 = Instant::now();
        let n = match res {
            Ok(n) => n.min(pending),
            // Interrupted, or the kernel wants completions reaped first: the
            // SQEs stay queued and go with the next enter.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                ) =>
            {
                0
            }
            Err(e) => return Err(e),
        };
        let mut ops = 0u64;
        for &id in &self.unsubmitted[..n] {
            if id == WAKE_SLOT {
                continue;
            }
            if let Some(Some(slot)) = self.slots.get_mut(id as usize) {
                slot.submitted_at = t0;
                ops += 1;
            }
        }
        self.unsubmitted.drain(..n);
        if ops > 0 {
            bump(&self.counters.submits, 1);
            bump(&self.counters.sqes, ops);
            if let Some(tr) = &mut self.trace {
                let queued = self
                    .unsubmitted
                    .iter()
                    .filter(|&&id| id != WAKE_SLOT)
                    .count();
                let in_flight = self.in_kernel.saturating_sub(queued) as u64;
                tr.push(&Record {
                    t_ns: tr.t_ns(t1),
                    kind: Kind::Submit as u8,
                    op: OpCode::None as u8,
                    node: self.node_id,
                    d0: ops,
                    d1: in_flight,
                    d2: ns(t1.saturating_duration_since(t0)),
                    ..Record::default()
                });
            }
        }
        Ok(ops as usize)
    }

    /// Moves every ready completion into `out`; returns how many.
    pub fn reap(&mut self, out: &mut Vec<Completion<T>>) -> usize {
        let now = Instant::now();
        // One timestamp for the whole batch: every completion in it was
        // seen at `now`.
        let t_ns = self.trace.as_ref().map_or(0, |tr| tr.t_ns(now));
        let mut n = 0;
        for cqe in self.ring.completion() {
            let ud = cqe.user_data();
            if ud == WAKE_TOKEN {
                self.woken = true;
                if !cqueue::more(cqe.flags()) {
                    // The multishot poll ended: re-armed with the next submit.
                    self.wake_armed = false;
                }
                continue;
            }
            let Some(slot) = usize::try_from(ud)
                .ok()
                .and_then(|i| self.slots.get_mut(i))
                .and_then(Option::take)
            else {
                continue;
            };
            self.free_slots.push(ud as u32);
            self.in_kernel -= 1;
            let result = cqe.result();
            let mut op = slot.op;
            if let Op::Read(r) = &mut op {
                r.buf.set_len(usize::try_from(result).unwrap_or(0));
            }
            let latency_ns = ns(now.saturating_duration_since(slot.submitted_at));
            let queue_ns = ns(slot.submitted_at.saturating_duration_since(slot.queued_at));
            if let Some(tr) = &mut self.trace {
                let code = op.code();
                let bytes = match code {
                    OpCode::Read | OpCode::Write => u64::try_from(result).unwrap_or(0),
                    _ => 0,
                };
                tr.push(&Record {
                    t_ns,
                    kind: Kind::StorageOp as u8,
                    op: code as u8,
                    node: self.node_id,
                    status: if result < 0 { status_of(-result) } else { 0 },
                    retries: 0,
                    bytes,
                    d0: latency_ns,
                    d1: queue_ns,
                    d2: op.offset(),
                });
            }
            out.push(Completion {
                token: slot.token,
                op,
                result,
                latency_ns,
                queue_ns,
            });
            n += 1;
        }
        bump(&self.counters.completed_ops, n as u64);
        self.counters
            .in_flight
            .store(self.in_flight() as u64, Ordering::Relaxed);
        n
    }

    /// Writes buffered trace records to the trace file.
    pub fn flush_trace(&mut self) {
        if let Some(t) = &mut self.trace {
            t.flush();
        }
    }
}

#[inline]
fn ns(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Deliberately never frees `x` (memory the kernel may still write to).
#[expect(
    clippy::mem_forget,
    reason = "freeing would let the kernel write into reused memory"
)]
fn leak<X>(x: X) {
    std::mem::forget(x);
}

impl<T> Drop for Driver<T> {
    fn drop(&mut self) {
        // Never submitted: nothing of theirs is in the kernel.
        self.backlog.clear();
        let mut done = Vec::new();
        while self.in_kernel > 0 {
            let ok = self.submit_and_wait(1).is_ok();
            let reaped = self.reap(&mut done);
            done.clear();
            if !ok && reaped == 0 {
                // The ring cannot tell us when the kernel is done with the
                // buffers of the operations still in it: leak them (and the
                // pool's mapping) rather than free memory the kernel may
                // still write to.
                leak(std::mem::take(&mut self.slots));
                leak(self.pool.take());
                break;
            }
        }
        self.flush_trace();
    }
}
