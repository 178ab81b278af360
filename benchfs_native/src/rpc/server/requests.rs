//! Requests: decoding and routing an arriving request (contract: a
//! message that does not decode gets an EBADMSG reply when its header
//! decoded and its channel is open with the header's token, else it is
//! dropped with a log line; a
//! request for another node id gets ESTALE), answering the ops that need
//! no storage at once, queueing the others, and sending every reply.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use benchfs_ucx::{AmMessage, SendOptions};

use super::data_buf::DataBuf;
use super::dispatch::{Job, Outcome};
use super::event_loop::Server;
use super::slots::{Meta, Queued, Sending};
use super::stats::{self, Gauges, Identity, Rejected};
use crate::rpc::session::AM_REPLY;
use crate::rpc::wire::{self, Op, Reply, Request, Route};

impl Server<'_> {
    /// An arriving request.
    pub(super) fn on_request(&mut self, msg: AmMessage) {
        let arrival = Instant::now();
        let header = match wire::decode_header(msg.header(), &self.limits) {
            Ok(h) => h,
            Err(e) => {
                self.stats.reject(Rejected::Header);
                self.log_drop(&format!(
                    "dropped a message whose header does not decode: {e}"
                ));
                return;
            }
        };
        let refusal = match self.channels.get(header.channel) {
            None => Some("which is not open"),
            // A channel number alone opens nothing: the token from the
            // accept proves the sender holds the session.
            Some(ch) if ch.token != header.token => {
                Some("with a token that is not the channel's (another client's channel?)")
            }
            Some(_) => None,
        };
        if refusal.is_none() {
            self.channels.touch(header.channel, arrival);
        }
        if let Some(why) = refusal {
            self.stats.reject(Rejected::Channel);
            self.log_drop(&format!(
                "dropped request {} ({}) on channel {}, {why}",
                header.request_id, header.op, header.channel
            ));
            return;
        }
        let route = Route {
            request_id: header.request_id,
            node: self.cfg.node_id,
            channel: header.channel,
            token: 0,
        };
        let mut meta = Meta::new(route, header.op, arrival);
        self.stats.request(header.op);
        let request = match wire::decode_request_body(msg.header(), &header, &self.limits) {
            Ok(r) => r,
            Err(e) => {
                self.stats.reject(Rejected::Body);
                self.error_reply(meta, libc::EBADMSG, &format!("{}: {e}", header.op));
                return;
            }
        };
        if header.node != self.cfg.node_id {
            self.stats.reject(Rejected::Node);
            let text = format!(
                "{} {}: routed with another membership (sent to node {}, this is node {} {})",
                header.op,
                request.path(),
                header.node,
                self.cfg.node_id,
                self.cfg.node_name
            );
            self.error_reply(meta, libc::ESTALE, &text);
            return;
        }
        if let Err(e) = header.check_payload(msg.len()) {
            self.stats.reject(Rejected::Payload);
            self.error_reply(meta, libc::EBADMSG, &format!("{}: {e}", header.op));
            return;
        }
        if self.stopping() && !matches!(header.op, Op::Ping | Op::Stats | Op::Shutdown) {
            self.stats.refused_stopping += 1;
            let text = format!(
                "{} {}: node {} is shutting down",
                header.op,
                request.path(),
                self.cfg.node_id
            );
            self.error_reply(meta, libc::ESHUTDOWN, &text);
            return;
        }
        match request {
            Request::Ping { len: 0, .. } => {
                let reply = Reply::Ping {
                    time_unix_ns: unix_now_ns(),
                    len: 0,
                };
                self.reply(meta, &reply, Vec::new(), None);
                return;
            }
            Request::Stats => {
                let json = self.stats_json().into_bytes();
                let len = json.len() as u64;
                self.reply(meta, &Reply::Stats { json_len: len }, json, None);
                return;
            }
            Request::Shutdown { force } => {
                self.reply(meta, &Reply::Shutdown, Vec::new(), None);
                let reason = format!("shutdown request{}", if force { " (force)" } else { "" });
                self.begin_stop(reason, force);
                return;
            }
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
        let need = usize::try_from(need).unwrap_or(usize::MAX);
        if self.queue.len() >= self.cfg.max_queued {
            let text = format!(
                "{} {}: node {} has {} requests waiting (its bound)",
                header.op,
                request.path(),
                self.cfg.node_name,
                self.queue.len()
            );
            self.error_reply(meta, libc::EBUSY, &text);
            return;
        }
        let job = Job {
            token: 0,
            request: request.to_owned_path(),
            buf: Vec::new(),
            fixed: None,
        };
        // Only a message with a payload to use is kept (received at
        // dispatch); the others release UCX's buffer now.
        let msg = if payload > 0 { Some(msg) } else { None };
        self.queue.push_back(Queued {
            msg,
            job,
            meta,
            need,
        });
        self.stats.queue_peak = self.stats.queue_peak.max(self.queue.len());
    }

    /// A storage result: its reply.
    pub(super) fn complete(&mut self, o: Outcome) {
        let Some(meta) = self.slots.get_mut(o.token) else {
            self.bufs.put(o.buf);
            return;
        };
        meta.storage_ns = o.storage_ns;
        let token = Some(o.token);
        let mut buf = o.buf;
        let reply = match o.result {
            Err(f) => {
                self.bufs.put(buf);
                let meta = *meta;
                self.slots_error_reply(meta, token, f.errno, &f.message);
                return;
            }
            Ok(reply) => reply,
        };
        match reply {
            Reply::Write { written } => self.stats.bytes_in += written,
            Reply::Read { .. } => {
                // Read on the ring: sent from the registered buffer the
                // data was read into; the idle pool vector goes back now.
                let (data, pooled) = match o.fixed {
                    Some(fixed) => {
                        self.bufs.put(buf);
                        (DataBuf::Fixed(fixed), false)
                    }
                    None => (DataBuf::Heap(buf), true),
                };
                let len = data.len() as u64;
                meta.bytes = len;
                self.stats.bytes_out += len;
                let meta = *meta;
                self.send_data(meta, &Reply::Read { len }, data, pooled, token, 0);
                return;
            }
            _ => {}
        }
        let meta = *meta;
        if meta.op.reply_payload() {
            // Directory entries, a link's target, an echo: in the buffer.
            self.send(meta, &reply, buf, true, token, 0);
        } else {
            buf.clear();
            self.bufs.put(buf);
            self.send(meta, &reply, Vec::new(), false, token, 0);
        }
    }

    /// An immediate (slot-less) reply.
    pub(super) fn reply(
        &mut self,
        meta: Meta,
        reply: &Reply<'_>,
        payload: Vec<u8>,
        token: Option<u32>,
    ) {
        self.send(meta, reply, payload, false, token, 0);
    }

    /// An error reply to a request that holds no slot.
    pub(super) fn error_reply(&mut self, meta: Meta, errno: i32, message: &str) {
        self.slots_error_reply(meta, None, errno, message);
    }

    fn slots_error_reply(&mut self, meta: Meta, token: Option<u32>, errno: i32, message: &str) {
        self.stats.error(meta.op);
        let reply = Reply::Error {
            op: meta.op,
            errno,
            message,
        };
        self.send(meta, &reply, Vec::new(), false, token, errno);
    }

    /// Encodes `reply` and sends it with `payload` on the request's
    /// channel. The slot (if any) is freed when the send completes.
    fn send(
        &mut self,
        meta: Meta,
        reply: &Reply<'_>,
        payload: Vec<u8>,
        pooled: bool,
        token: Option<u32>,
        status: i32,
    ) {
        self.send_data(meta, reply, DataBuf::Heap(payload), pooled, token, status);
    }

    /// As [`Server::send`] for a payload in either kind of buffer.
    fn send_data(
        &mut self,
        meta: Meta,
        reply: &Reply<'_>,
        payload: DataBuf,
        pooled: bool,
        token: Option<u32>,
        status: i32,
    ) {
        let start = Instant::now();
        self.scratch.clear();
        if let Err(e) = wire::encode_reply(&mut self.scratch, meta.route, reply) {
            // Only a bad errno can fail here: a bug, never the client's.
            self.log(&format!("cannot encode the reply to {}: {e}", meta.op));
            self.give_back(payload, pooled);
            self.finish(token, Some((meta, libc::EIO, start)));
            return;
        }
        let Some(ch) = self.channels.get(meta.route.channel) else {
            self.stats.replies_dropped += 1;
            self.give_back(payload, pooled);
            self.finish(token, Some((meta, status, start)));
            return;
        };
        match ch
            .ep
            .am_send(AM_REPLY, &self.scratch, payload, SendOptions::default())
        {
            Ok(req) => self.sends.push(Sending {
                req,
                token,
                pooled,
                done: Some((meta, status, start)),
            }),
            Err(e) => {
                if pooled {
                    self.bufs.put(Vec::new());
                }
                let msg = format!(
                    "sending the reply to {} {} on channel {} failed: {e}",
                    meta.op, meta.route.request_id, meta.route.channel
                );
                if super::peers::peer_gone(&e) {
                    self.peer_failed(meta.route.channel, msg);
                } else {
                    self.log_drop(&msg);
                }
                self.finish(token, Some((meta, e.errno(), start)));
            }
        }
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

    /// The stats JSON document now.
    pub(super) fn stats_json(&self) -> String {
        let id = Identity {
            node_name: &self.cfg.node_name,
            node_id: self.cfg.node_id,
            chunk_size: self.chunk_size,
            max_concurrency: self.cfg.max_concurrency,
            durability: self.cfg.durability.name(),
            bulk_spin_us: u64::try_from(self.cfg.bulk_spin.as_micros()).unwrap_or(u64::MAX),
        };
        let g = Gauges {
            queue_depth: self.queue.len(),
            in_flight: self.slots.len(),
            channels_open: self.channels.open_count(),
            channels_opened: self.channels.opened_total(),
            stopping: self.stopping(),
            namespace_records: self.storage.namespace_records(),
            link_table_entries: self.storage.link_table_entries(),
        };
        stats::to_json(&id, &self.stats, &g, &self.store.stats())
    }
}

pub(super) fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
