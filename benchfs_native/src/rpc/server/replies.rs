//! The replies: each encoded and sent on its request's channel, held
//! until UCX has sent it ([`Sending`]), and recorded in the event log once
//! its request is over (the `rpc_server` record: queue wait, storage time,
//! reply time).

use std::time::{Duration, Instant};

use benchfs_ucx::{Endpoint, Error as UcxError, Request, SendOptions};

use super::data_buf::DataBuf;
use super::slots::Meta;
use crate::rpc::session::AM_REPLY;
use crate::rpc::trace_op;
use crate::rpc::wire::{self, Reply};
use crate::trace::format::{Kind, status_of};
use crate::trace::{Record, TraceBuffer};

/// A reply being sent.
#[derive(Debug)]
pub(super) struct Sending {
    pub req: Request<DataBuf>,
    /// The slot freed when the send completes.
    pub token: Option<u32>,
    /// The payload is a pool vector (a registered buffer never is).
    pub pooled: bool,
    /// For the trace: the request, its status and when the send started.
    pub done: (Meta, i32, Instant),
}

/// A reply that did not leave.
#[derive(Debug)]
pub(super) enum Unsent {
    /// It does not encode (only a bad errno: a bug, never the client's);
    /// the payload comes back.
    Encode(crate::error::Error, DataBuf),
    /// Its channel was closed meanwhile; the payload comes back.
    NoChannel(DataBuf),
    /// UCX refused the send; the payload went with it.
    Failed(UcxError),
}

/// A finished send: what it held, and how it ended (`None`: taken back
/// unfinished).
#[derive(Debug)]
pub(super) struct Sent {
    pub token: Option<u32>,
    pub pooled: bool,
    pub done: (Meta, i32, Instant),
    pub result: Option<Result<DataBuf, UcxError>>,
}

/// The replies in flight, the encoding scratch and the event log.
#[derive(Debug)]
pub(super) struct Replies {
    sends: Vec<Sending>,
    scratch: Vec<u8>,
    trace: Option<TraceBuffer>,
    node: u16,
}

impl Replies {
    /// Replies of daemon `node_id`, recorded in `trace` when given.
    pub(super) fn new(node_id: u32, trace: Option<TraceBuffer>) -> Replies {
        Replies {
            sends: Vec::new(),
            scratch: Vec::with_capacity(256),
            trace,
            node: u16::try_from(node_id).unwrap_or(u16::MAX),
        }
    }

    /// Encodes `reply` and sends it with `payload` on `ep`, the request's
    /// channel's endpoint (`None`: closed); `token` is the slot freed when
    /// the send completes, `status` the request's for the trace.
    #[allow(
        clippy::too_many_arguments,
        reason = "a reply's every part, each passed on once"
    )]
    pub(super) fn send(
        &mut self,
        ep: Option<&Endpoint>,
        meta: Meta,
        reply: &Reply<'_>,
        payload: DataBuf,
        pooled: bool,
        token: Option<u32>,
        status: i32,
    ) -> Result<(), Unsent> {
        let start = Instant::now();
        self.scratch.clear();
        if let Err(e) = wire::encode_reply(&mut self.scratch, meta.route, reply) {
            return Err(Unsent::Encode(e, payload));
        }
        let Some(ep) = ep else {
            return Err(Unsent::NoChannel(payload));
        };
        let req = ep
            .am_send(AM_REPLY, &self.scratch, payload, SendOptions::default())
            .map_err(Unsent::Failed)?;
        self.sends.push(Sending {
            req,
            token,
            pooled,
            done: (meta, status, start),
        });
        Ok(())
    }

    /// A send UCX has finished, if any.
    pub(super) fn sent(&mut self) -> Option<Sent> {
        let i = self.sends.iter().position(|s| s.req.is_done())?;
        let s = self.sends.swap_remove(i);
        let result = s.req.try_take().ok();
        Some(Sent {
            token: s.token,
            pooled: s.pooled,
            done: s.done,
            result,
        })
    }

    /// The channels and send start times of the replies in flight.
    pub(super) fn sending_since(&self) -> impl Iterator<Item = (u16, Instant)> + '_ {
        self.sends
            .iter()
            .map(|s| (s.done.0.route.channel, s.done.2))
    }

    /// Takes out the replies in flight on channel `id` (abandoned to UCX).
    pub(super) fn abandon(&mut self, id: u16) -> Vec<Sending> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.sends.len() {
            if self.sends[i].done.0.route.channel == id {
                out.push(self.sends.swap_remove(i));
            } else {
                i += 1;
            }
        }
        out
    }

    /// No reply in flight.
    pub(super) fn is_empty(&self) -> bool {
        self.sends.is_empty()
    }

    /// Records request `m`, answered with `status`, its reply started at
    /// `reply_start`, in the event log.
    pub(super) fn record(&mut self, m: &Meta, status: i32, reply_start: Instant) {
        let Some(trace) = &mut self.trace else {
            return;
        };
        let now = Instant::now();
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        trace.push(&Record {
            t_ns: trace.t_ns(now),
            kind: Kind::RpcServer as u8,
            op: trace_op(m.op) as u8,
            node: self.node,
            status: status_of(status),
            retries: 0,
            bytes: m.bytes,
            d0: ns(m.dispatched.saturating_duration_since(m.arrival)),
            d1: m.storage_ns,
            d2: ns(now.saturating_duration_since(reply_start)),
        });
    }

    /// Records `datagrams` from another user on the wake-up sockets, the
    /// last from `uid` and `pid`, in the event log.
    pub(super) fn record_foreign(&mut self, datagrams: u64, uid: u32, pid: i32) {
        let Some(trace) = &mut self.trace else {
            return;
        };
        trace.push(&Record {
            t_ns: trace.t_ns(Instant::now()),
            kind: Kind::ForeignSignal as u8,
            op: 0,
            node: self.node,
            status: 0,
            retries: 0,
            bytes: 0,
            d0: datagrams,
            d1: u64::from(uid),
            d2: u64::try_from(pid).unwrap_or(0),
        });
    }

    /// Drops the replies in flight and writes out the event log (at
    /// teardown).
    pub(super) fn close(&mut self) {
        self.sends.clear();
        if let Some(t) = &mut self.trace {
            t.flush();
        }
    }
}
