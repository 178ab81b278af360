//! A request's end: its storage outcome answered, the reply sent or held
//! until it can be, and its record in the event log.

use std::time::Instant;

use super::Router;
use crate::rpc::server::data_buf::DataBuf;
use crate::rpc::server::peers::peer_gone;
use crate::rpc::server::replies::Unsent;
use crate::rpc::server::slots::Meta;
use crate::rpc::server::storage::Outcome;
use crate::rpc::wire::Reply;

impl Router {
    pub(in crate::rpc::server) fn drain_completions(&mut self) -> bool {
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
    pub(super) fn complete(&mut self, o: Outcome) {
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
    pub(super) fn answer(&mut self, meta: Meta, reply: &Reply<'_>, payload: Vec<u8>) {
        self.send(meta, reply, DataBuf::Heap(payload), false, None, 0);
    }

    /// An error reply to a request that holds no slot.
    pub(super) fn error_reply(&mut self, meta: Meta, errno: i32, message: &str) {
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
    pub(in crate::rpc::server) fn poll_sends(&mut self) -> bool {
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
    pub(super) fn finish(
        &mut self,
        token: Option<u32>,
        meta: Meta,
        status: i32,
        reply_start: Instant,
    ) {
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
}
