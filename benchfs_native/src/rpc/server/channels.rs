//! The channel table: one entry per connected client session, holding the
//! endpoint the daemon answers on (docs/WIRE_PROTOCOL.md, "Sessions").
//!
//! Channel numbers are handed out round-robin rather than lowest-first, so
//! a number freed by a disconnect is not given to the next client at once
//! (a late request on the old number then finds no channel instead of
//! someone else's).

use std::time::{Duration, Instant};

use benchfs_ucx::Endpoint;

/// One open session.
#[derive(Debug)]
pub struct Channel {
    /// The endpoint back to the client's worker.
    pub ep: Endpoint,
    /// The client's id from its connect.
    pub client_id: u64,
    /// The client's name, for log lines.
    pub client_name: String,
    /// Random, given in the accept: every request on the channel must
    /// carry it, so a channel number alone opens nothing.
    pub token: u64,
    /// When the channel last carried a request (or was opened).
    pub last_used: Instant,
}

/// Channels `1..=max`.
#[derive(Debug)]
pub struct Channels {
    slots: Vec<Option<Channel>>,
    max: u16,
    next: u16,
    open: usize,
    opened_total: u64,
}

impl Channels {
    /// A table of at most `max` channels (1..=65535).
    pub fn new(max: u16) -> Channels {
        Channels {
            slots: Vec::new(),
            max: max.max(1),
            next: 1,
            open: 0,
            opened_total: 0,
        }
    }

    /// Opens a channel for `ch`; `Err(ch)` when every channel is in use.
    pub fn open(&mut self, ch: Channel) -> Result<u16, Channel> {
        if self.open >= usize::from(self.max) {
            return Err(ch);
        }
        let mut id = self.next;
        loop {
            let i = usize::from(id);
            if i >= self.slots.len() {
                self.slots.resize_with(i + 1, || None);
            }
            if self.slots[i].is_none() {
                break;
            }
            id = if id >= self.max { 1 } else { id + 1 };
        }
        self.slots[usize::from(id)] = Some(ch);
        self.next = if id >= self.max { 1 } else { id + 1 };
        self.open += 1;
        self.opened_total += 1;
        Ok(id)
    }

    /// The open channel `id`.
    pub fn get(&self, id: u16) -> Option<&Channel> {
        self.slots.get(usize::from(id))?.as_ref()
    }

    /// Marks channel `id` as used now.
    pub fn touch(&mut self, id: u16, now: Instant) {
        if let Some(Some(ch)) = self.slots.get_mut(usize::from(id)) {
            ch.last_used = now;
        }
    }

    /// The channel idle the longest, if idle for at least `idle`.
    pub fn idlest(&self, idle: Duration, now: Instant) -> Option<u16> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.as_ref().map(|c| (i, c.last_used)))
            .filter(|(_, used)| now.saturating_duration_since(*used) >= idle)
            .min_by_key(|(_, used)| *used)
            .and_then(|(i, _)| u16::try_from(i).ok())
    }

    /// Closes channel `id`, returning its session.
    pub fn remove(&mut self, id: u16) -> Option<Channel> {
        let ch = self.slots.get_mut(usize::from(id))?.take()?;
        self.open -= 1;
        Some(ch)
    }

    /// Closes every channel.
    pub fn drain(&mut self) -> Vec<Channel> {
        self.open = 0;
        self.slots.drain(..).flatten().collect()
    }

    /// Channels open now.
    pub fn open_count(&self) -> usize {
        self.open
    }

    /// Channels opened since start.
    pub fn opened_total(&self) -> u64 {
        self.opened_total
    }
}
