//! The slots: a request's way through the loop from its arrival to its
//! reply. A request waits in the queue ([`Queued`]) until a slot and a
//! data buffer are free, holds both from its dispatch until its reply has
//! been sent (its [`Meta`] in the slot table), and meanwhile may wait for
//! its write data ([`Receiving`]). The slots bound the storage work in
//! flight and the buffer memory; the queue is bounded too (`max_queued`).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use benchfs_ucx::{AmMessage, Request};

use super::buffers::BufPool;
use super::data_buf::DataBuf;
use super::storage::Job;
use crate::rpc::wire::{Op, Route};

/// What a request carries through the loop, for its reply and its trace
/// record.
#[derive(Debug, Clone, Copy)]
pub(super) struct Meta {
    /// Request id and channel to answer on (node = this daemon).
    pub route: Route,
    pub op: Op,
    pub arrival: Instant,
    pub dispatched: Instant,
    pub storage_ns: u64,
    /// Payload bytes moved (write data in, read data out).
    pub bytes: u64,
}

impl Meta {
    pub(super) fn new(route: Route, op: Op, arrival: Instant) -> Meta {
        Meta {
            route,
            op,
            arrival,
            dispatched: arrival,
            storage_ns: 0,
            bytes: 0,
        }
    }
}

/// A request waiting for a slot.
#[derive(Debug)]
pub(super) struct Queued {
    /// A message whose payload is received at dispatch.
    pub msg: Option<AmMessage>,
    pub job: Job,
    pub meta: Meta,
    /// Buffer capacity the request needs.
    pub need: usize,
}

/// A write whose rendezvous data is arriving.
#[derive(Debug)]
pub(super) struct Receiving {
    pub req: Request<DataBuf>,
    pub job: Job,
}

/// The queue, the slot table, the data buffers and the writes whose data
/// is arriving.
#[derive(Debug)]
pub(super) struct Slots {
    queue: VecDeque<Queued>,
    max_queued: usize,
    /// How long each request stays queued at least (a fault point; zero: none).
    hold: Duration,
    table: Vec<Option<Meta>>,
    free: Vec<u32>,
    used: usize,
    max: usize,
    bufs: BufPool,
    receiving: Vec<Receiving>,
}

impl Slots {
    /// `max` slots (and buffers), `max_queued` requests waiting, each
    /// for `hold` at least.
    pub(super) fn new(max: usize, max_queued: usize, hold: Duration) -> Slots {
        Slots {
            queue: VecDeque::new(),
            max_queued,
            hold,
            table: Vec::new(),
            free: Vec::new(),
            used: 0,
            max,
            bufs: BufPool::new(max),
            receiving: Vec::new(),
        }
    }

    /// Whether the queue is at its bound.
    pub(super) fn queue_full(&self) -> bool {
        self.queue.len() >= self.max_queued
    }

    /// Requests waiting for a slot.
    pub(super) fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Queues `q`; returns the queue's length.
    pub(super) fn push(&mut self, q: Queued) -> usize {
        self.queue.push_back(q);
        self.queue.len()
    }

    /// Every queued request, taken out (a forced stop refuses them).
    pub(super) fn take_queue(&mut self) -> VecDeque<Queued> {
        std::mem::take(&mut self.queue)
    }

    /// The oldest queued request, dispatched at `now` when a slot and a
    /// buffer of the capacity it needs are free: it holds its slot (its
    /// job's token) and the buffer returned.
    pub(super) fn dispatch(&mut self, now: Instant) -> Option<(Queued, Vec<u8>)> {
        if self.used >= self.max {
            return None;
        }
        let front = self.queue.front()?;
        // Arrivals are in queue order: none behind the front is due sooner.
        if now < front.meta.arrival + self.hold {
            return None;
        }
        let buf = self.bufs.take(front.need)?;
        let mut q = self.queue.pop_front()?;
        q.meta.dispatched = now;
        q.job.token = self.insert(q.meta);
        Some((q, buf))
    }

    /// How long the loop may sleep at most while requests are held (the
    /// fault point): until the oldest queued one is due, or one hold
    /// with none queued (a request may wait unseen in the inbox).
    pub(super) fn held_for(&self, now: Instant) -> Option<Duration> {
        if self.hold.is_zero() {
            return None;
        }
        Some(match self.queue.front() {
            Some(q) => (q.meta.arrival + self.hold).saturating_duration_since(now),
            None => self.hold,
        })
    }

    fn insert(&mut self, meta: Meta) -> u32 {
        self.used += 1;
        match self.free.pop() {
            Some(t) => {
                self.table[t as usize] = Some(meta);
                t
            }
            None => {
                self.table.push(Some(meta));
                (self.table.len() - 1) as u32
            }
        }
    }

    /// The dispatched request `token`.
    pub(super) fn get(&self, token: u32) -> Option<&Meta> {
        self.table.get(token as usize)?.as_ref()
    }

    /// The dispatched request `token`, to update.
    pub(super) fn get_mut(&mut self, token: u32) -> Option<&mut Meta> {
        self.table.get_mut(token as usize)?.as_mut()
    }

    /// Frees slot `token`.
    pub(super) fn release(&mut self, token: u32) -> Option<Meta> {
        let m = self.table.get_mut(token as usize)?.take()?;
        self.free.push(token);
        self.used -= 1;
        Some(m)
    }

    /// Requests dispatched and not yet answered.
    pub(super) fn in_flight(&self) -> usize {
        self.used
    }

    /// Returns a data buffer (or an empty one in place of a buffer lost
    /// with a failed operation).
    pub(super) fn put_buf(&mut self, buf: Vec<u8>) {
        self.bufs.put(buf);
    }

    /// Returns a sent (or unsent) payload: a pool vector to the pool, a
    /// registered buffer to its store (by dropping it).
    pub(super) fn give_back(&mut self, payload: DataBuf, pooled: bool) {
        match payload {
            DataBuf::Heap(v) if pooled => self.bufs.put(v),
            DataBuf::Fixed(_) if pooled => self.bufs.put(Vec::new()),
            _ => {}
        }
    }

    /// The buffer pool's counters: buffers grown, buffers in existence.
    pub(super) fn buffer_counts(&self) -> (u64, usize) {
        (self.bufs.grows(), self.bufs.live())
    }

    /// A write whose data is being received.
    pub(super) fn receiving(&mut self, r: Receiving) {
        self.receiving.push(r);
    }

    /// A write whose data has arrived (or failed to), if any.
    pub(super) fn received(&mut self) -> Option<Receiving> {
        let i = self.receiving.iter().position(|r| r.req.is_done())?;
        Some(self.receiving.swap_remove(i))
    }

    /// The channels and dispatch times of the writes whose data is
    /// arriving.
    pub(super) fn receiving_since(&self) -> impl Iterator<Item = (u16, Instant)> + '_ {
        self.receiving
            .iter()
            .filter_map(|r| self.get(r.job.token))
            .map(|m| (m.route.channel, m.dispatched))
    }

    /// Drops the queued requests and the receiving writes of channel `id`
    /// (a fresh buffer takes the place of each receive's); returns how many
    /// were queued and the slots of the receives, still held.
    pub(super) fn abandon(&mut self, id: u16) -> (usize, Vec<(u32, Meta)>) {
        let before = self.queue.len();
        self.queue.retain(|q| q.meta.route.channel != id);
        let queued = before - self.queue.len();
        let mut held = Vec::new();
        let mut i = 0;
        while i < self.receiving.len() {
            let token = self.receiving[i].job.token;
            match self.get(token).copied() {
                Some(meta) if meta.route.channel == id => {
                    // The receive's buffer goes with it.
                    drop(self.receiving.swap_remove(i));
                    self.bufs.put(Vec::new());
                    held.push((token, meta));
                }
                _ => i += 1,
            }
        }
        (queued, held)
    }

    /// Nothing queued, dispatched or receiving.
    pub(super) fn is_empty(&self) -> bool {
        self.queue.is_empty() && self.used == 0 && self.receiving.is_empty()
    }

    /// Drops what is queued or receiving (at teardown).
    pub(super) fn clear(&mut self) {
        self.queue.clear();
        self.receiving.clear();
    }
}
