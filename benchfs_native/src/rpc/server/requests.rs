//! Arriving requests: decoded and checked, then answered at once, queued
//! for a slot, or refused. The contract: a message that does not decode
//! gets an EBADMSG reply when its header decoded and its channel is open
//! with the header's token, else it is dropped with a log line; a request
//! for another node id gets ESTALE; while stopping, only ping, stats and
//! shutdown are served.

use std::time::Instant;

use benchfs_ucx::AmMessage;

use super::log::Log;
use super::sessions::Sessions;
use super::slots::{Meta, Queued};
use super::stats::{Rejected, ServerStats};
use super::storage::Job;
use crate::rpc::wire::{self, Limits, Op, Request, Route};

/// What becomes of an arriving request.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "the queued request moves whole either way; boxing it costs an allocation per request"
)]
pub(super) enum Arrival {
    /// Dropped, with a log line: there is nobody to answer.
    Dropped,
    /// Refused with this errno and text.
    Refused(Meta, i32, String),
    /// A ping without payload: answered at once.
    Ping(Meta),
    /// The stats JSON: answered at once.
    Stats(Meta),
    /// Shut down (forced: without draining), after the reply.
    Shutdown(Meta, bool),
    /// To queue for a slot.
    Queue(Queued),
}

/// What an arriving request is checked against.
#[derive(Debug)]
pub(super) struct Intake {
    limits: Limits,
    node_id: u32,
    node_name: String,
}

impl Intake {
    /// Requests for daemon `node_id` (`node_name`) whose data is at most
    /// a chunk of `chunk_size` bytes: a write never carries more than a
    /// chunk, a read never asks for more, so a larger length is a lie,
    /// refused while decoding.
    pub(super) fn new(node_id: u32, node_name: &str, chunk_size: u64) -> Intake {
        Intake {
            limits: Limits {
                max_payload: chunk_size,
                ..Limits::default()
            },
            node_id,
            node_name: node_name.to_owned(),
        }
    }

    /// Decodes and checks `msg`, which arrived at `arrival`: its header,
    /// its channel (`sessions`), its body, its node id, its payload's
    /// length, and whether the daemon serves it while `stopping`.
    pub(super) fn admit(
        &self,
        msg: AmMessage,
        arrival: Instant,
        sessions: &mut Sessions,
        stopping: bool,
        stats: &mut ServerStats,
        log: &mut Log,
    ) -> Arrival {
        let header = match wire::decode_header(msg.header(), &self.limits) {
            Ok(h) => h,
            Err(e) => {
                stats.reject(Rejected::Header);
                log.dropped(&format!(
                    "dropped a message whose header does not decode: {e}"
                ));
                return Arrival::Dropped;
            }
        };
        if let Err(why) = sessions.check(header.channel, header.token, arrival) {
            stats.reject(Rejected::Channel);
            log.dropped(&format!(
                "dropped request {} ({}) on channel {}, {why}",
                header.request_id, header.op, header.channel
            ));
            return Arrival::Dropped;
        }
        let route = Route {
            request_id: header.request_id,
            node: self.node_id,
            channel: header.channel,
            token: 0,
        };
        let mut meta = Meta::new(route, header.op, arrival);
        stats.request(header.op);
        let request = match wire::decode_request_body(msg.header(), &header, &self.limits) {
            Ok(r) => r,
            Err(e) => {
                stats.reject(Rejected::Body);
                return Arrival::Refused(meta, libc::EBADMSG, format!("{}: {e}", header.op));
            }
        };
        if header.node != self.node_id {
            stats.reject(Rejected::Node);
            let text = format!(
                "{} {}: routed with another membership (sent to node {}, this is node {} {})",
                header.op,
                request.path(),
                header.node,
                self.node_id,
                self.node_name
            );
            return Arrival::Refused(meta, libc::ESTALE, text);
        }
        if let Err(e) = header.check_payload(msg.len()) {
            stats.reject(Rejected::Payload);
            return Arrival::Refused(meta, libc::EBADMSG, format!("{}: {e}", header.op));
        }
        if stopping && !matches!(header.op, Op::Ping | Op::Stats | Op::Shutdown) {
            stats.refused_stopping += 1;
            let text = format!(
                "{} {}: node {} is shutting down",
                header.op,
                request.path(),
                self.node_id
            );
            return Arrival::Refused(meta, libc::ESHUTDOWN, text);
        }
        match request {
            Request::Ping { len: 0, .. } => return Arrival::Ping(meta),
            Request::Stats => return Arrival::Stats(meta),
            Request::Shutdown { force } => return Arrival::Shutdown(meta, force),
            // A ping's payload is received at dispatch, like write data (a
            // bandwidth measure must move the bytes), and sent back on echo.
            Request::Ping { len, .. } | Request::Write { len, .. } => meta.bytes = len,
            _ => {}
        }
        // The buffer a dispatched request holds: its payload's, or a read's.
        let payload = request.payload_len();
        let need = match request {
            Request::Read { len, .. } => len,
            _ => payload,
        };
        let job = Job {
            token: 0,
            request: request.to_owned_path(),
            buf: Vec::new(),
            fixed: None,
        };
        Arrival::Queue(Queued {
            // Only a message with a payload to use is kept (received at
            // dispatch); the others release UCX's buffer now.
            msg: (payload > 0).then_some(msg),
            job,
            meta,
            need: usize::try_from(need).unwrap_or(usize::MAX),
        })
    }
}
