//! A request's way through the event loop: what it carries ([`Meta`]),
//! where it waits (for a slot: [`Queued`]; for its write data:
//! [`Receiving`]; for its reply to leave: [`Sending`]), and the slot table
//! that bounds the requests dispatched at once ([`Slots`]).

use std::time::Instant;

use benchfs_ucx::{AmMessage, Request};

use super::data_buf::DataBuf;
use super::dispatch::Job;
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
    /// A write's message, whose payload is received at dispatch.
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

/// A reply (or accept) being sent.
#[derive(Debug)]
pub(super) struct Sending {
    pub req: Request<DataBuf>,
    /// The slot freed when the send completes.
    pub token: Option<u32>,
    /// The payload is a pool vector (a registered buffer never is).
    pub pooled: bool,
    /// For the trace: the request, its status and when the send started.
    pub done: Option<(Meta, i32, Instant)>,
}

/// Dispatched requests, by token.
#[derive(Debug, Default)]
pub(super) struct Slots {
    slots: Vec<Option<Meta>>,
    free: Vec<u32>,
    used: usize,
}

impl Slots {
    pub(super) fn insert(&mut self, meta: Meta) -> u32 {
        self.used += 1;
        match self.free.pop() {
            Some(t) => {
                self.slots[t as usize] = Some(meta);
                t
            }
            None => {
                self.slots.push(Some(meta));
                (self.slots.len() - 1) as u32
            }
        }
    }

    pub(super) fn get(&self, token: u32) -> Option<&Meta> {
        self.slots.get(token as usize)?.as_ref()
    }

    pub(super) fn get_mut(&mut self, token: u32) -> Option<&mut Meta> {
        self.slots.get_mut(token as usize)?.as_mut()
    }

    pub(super) fn remove(&mut self, token: u32) -> Option<Meta> {
        let m = self.slots.get_mut(token as usize)?.take()?;
        self.free.push(token);
        self.used -= 1;
        Some(m)
    }

    pub(super) fn len(&self) -> usize {
        self.used
    }
}
