//! The bounded window of outstanding RPCs.
//!
//! Every call gets a fresh request id; replies (`AM_REPLY`) are matched by
//! it, so they may arrive in any order. At most `max_in_flight` calls are
//! outstanding (a call waiting out a retry backoff counts). Each issue has
//! a deadline (`rpc_deadline`); a call fails with an error naming the node,
//! the operation and the cause, or completes with its [`Answer`].
//! Idempotent calls are repeated on transient errors (module `retry`); an
//! `ETIMEDOUT` is repeated only while the daemon is still reachable: its
//! process exists (same host) or it answers a ping (other hosts).
//!
//! A read reply's payload goes straight into the call's destination piece
//! (eager: copied; rendezvous: received into it by UCX). A call that is
//! given up leaves its UCX requests, and the pieces they own, to UCX: a
//! late reply is dropped by request id, and a late transfer writes into
//! memory that is still allocated.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::rc::Rc;
use std::time::{Duration, Instant};

use benchfs_ucx::{AmMessage, IoBuf, Request as UcxRequest, SendOptions};

use super::buf::{Piece, SharedBuf};
use super::connect::Conn;
use super::retry::{self, Transience};
use crate::error::{Error, Result, strerror};
use crate::rpc::session::AM_REQUEST;
use crate::rpc::trace_op;
use crate::rpc::transport::ucx_error;
use crate::rpc::wire::{self, Attr, Limits, Op, Reply, Request, Route};
use crate::trace::format::status_of;
use crate::trace::{Kind, Record, TraceBuffer};

/// Longest wait for a ping that decides whether a timed-out daemon is
/// still reachable.
const PROBE_LIMIT: Duration = Duration::from_secs(2);

/// What a call is about, for errors: `write testfile.3 chunk 12`.
#[derive(Debug, Clone)]
pub struct Label {
    /// The operation.
    pub op: Op,
    /// The path (empty for ping, stats, shutdown).
    pub path: Rc<str>,
    /// The chunk of a write or read.
    pub chunk: Option<u64>,
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.op.name())?;
        if !self.path.is_empty() {
            write!(f, " {}", self.path)?;
        }
        if let Some(c) = self.chunk {
            write!(f, " chunk {c}")?;
        }
        Ok(())
    }
}

/// One RPC to issue.
#[derive(Debug)]
pub struct Call {
    /// Target node id.
    pub node: u32,
    /// What it is about.
    pub label: Label,
    /// Caller's token, returned in the [`Outcome`].
    pub tag: u64,
    header: Vec<u8>,
    payload: Option<Piece>,
    dest: Option<Piece>,
    bytes: u64,
}

impl Call {
    /// A call of `request` to `node` (on the client's channel there).
    pub fn new(conn: &Conn, node: u32, request: &Request<'_>, tag: u64) -> Result<Call> {
        let channel = conn.nodes.get(node as usize).map_or(0, |n| n.channel);
        let mut header = Vec::with_capacity(wire::HEADER_LEN + 24 + request.path().len());
        wire::encode_request(&mut header, Route::new(0, node).on(channel), request)?;
        let (chunk, bytes) = match *request {
            Request::Write { chunk, len, .. } | Request::Read { chunk, len, .. } => {
                (Some(chunk), len)
            }
            _ => (None, 0),
        };
        Ok(Call {
            node,
            label: Label {
                op: request.op(),
                path: Rc::from(request.path()),
                chunk,
            },
            tag,
            header,
            payload: None,
            dest: None,
            bytes,
        })
    }

    /// The write data (its length must be the request's `len`).
    pub fn with_payload(mut self, piece: Piece) -> Call {
        self.payload = Some(piece);
        self
    }

    /// Where a read's data goes (at least the request's `len` bytes).
    pub fn with_dest(mut self, piece: Piece) -> Call {
        self.dest = Some(piece);
        self
    }

    fn set_request_id(&mut self, id: u64) {
        if let Some(b) = self.header.get_mut(16..24) {
            b.copy_from_slice(&id.to_le_bytes());
        }
    }
}

/// A directory entry of a readdir answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Name (one component).
    pub name: String,
    /// `st_mode`.
    pub mode: u32,
    /// Size in bytes.
    pub size: u64,
}

/// A successful reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// create / open / stat.
    Attr(Attr),
    /// write: bytes written.
    Written(u64),
    /// read: bytes received into the destination.
    Read(u64),
    /// readdir.
    Dir {
        /// Entries of this page.
        entries: Vec<Entry>,
        /// Where the next page starts.
        next_cursor: u64,
        /// No more pages.
        eof: bool,
    },
    /// stats: the JSON text.
    Json(String),
    /// ping: the daemon's clock.
    Ping(u64),
    /// fsync, truncate, unlink, shutdown.
    Done,
}

/// A finished call.
#[derive(Debug)]
pub struct Outcome {
    /// The call's tag.
    pub tag: u64,
    /// Its target node.
    pub node: u32,
    /// Its answer, or an [`Error::Rpc`].
    pub result: Result<Answer>,
}

impl Outcome {
    /// The errno of a failed call.
    pub fn errno(&self) -> Option<i32> {
        self.result.as_ref().err().and_then(Error::errno)
    }
}

/// Counters of one window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Calls finished (successfully or not).
    pub rpcs: u64,
    /// Calls that failed.
    pub failed: u64,
    /// Repetitions of calls.
    pub retries: u64,
    /// Issues that ran out of time.
    pub timeouts: u64,
    /// Replies for no outstanding call (after a timeout or retry).
    pub late_replies: u64,
    /// Replies whose header did not decode.
    pub bad_replies: u64,
}

/// Why a call failed.
#[derive(Debug, Clone)]
struct Failure {
    errno: i32,
    detail: String,
}

/// What a reply with a payload still waits for.
#[derive(Debug, Clone, Copy)]
enum Got {
    Read(u64),
    Dir {
        count: u32,
        next_cursor: u64,
        eof: bool,
    },
    Json,
    Ping(u64),
}

/// A send's payload: nothing, or a piece of a shared buffer.
enum SendBuf {
    Empty,
    Data(Piece),
}

// Safety: `Empty` is a valid zero-length region at a dangling, aligned,
// non-null pointer; `Data` delegates to `Piece`, whose region is stable.
unsafe impl IoBuf for SendBuf {
    fn stable_ptr(&self) -> *const u8 {
        match self {
            SendBuf::Empty => std::ptr::NonNull::<u8>::dangling().as_ptr(),
            SendBuf::Data(p) => p.stable_ptr(),
        }
    }
    fn bytes_init(&self) -> usize {
        match self {
            SendBuf::Empty => 0,
            SendBuf::Data(p) => p.bytes_init(),
        }
    }
}

struct Pending {
    call: Call,
    first_issue: Instant,
    issued: Instant,
    deadline: Instant,
    limit: Duration,
    send: Option<UcxRequest<SendBuf>>,
    sent: Option<Instant>,
    got: Option<Got>,
    recv: Option<UcxRequest<Piece>>,
    scratch: Option<SharedBuf>,
    retries: u16,
    resume_at: Option<Instant>,
    /// This call is a ping probing whether the node of the boxed call (which
    /// failed as given) is still reachable.
    probe_of: Option<(Box<Pending>, Failure)>,
}

impl Pending {
    fn new(call: Call, limit: Duration, now: Instant) -> Pending {
        Pending {
            call,
            first_issue: now,
            issued: now,
            deadline: now + limit,
            limit,
            send: None,
            sent: None,
            got: None,
            recv: None,
            scratch: None,
            retries: 0,
            resume_at: None,
            probe_of: None,
        }
    }

    fn io_done(&self) -> bool {
        self.send.as_ref().is_some_and(UcxRequest::is_done)
            || self.recv.as_ref().is_some_and(UcxRequest::is_done)
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The window of outstanding calls of one client.
pub struct Window {
    max_in_flight: usize,
    rpc_deadline: Duration,
    max_retries: u16,
    limits: Limits,
    active: HashMap<u64, Pending>,
    parked: Vec<Pending>,
    done: VecDeque<Outcome>,
    next_id: u64,
    scan: Vec<u64>,
    trace: Option<TraceBuffer>,
    counters: Counters,
}

impl fmt::Debug for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Window")
            .field("max_in_flight", &self.max_in_flight)
            .field("in_flight", &self.in_flight())
            .field("counters", &self.counters)
            .finish()
    }
}

impl Window {
    /// A window of at most `max_in_flight` calls (at least 1), each with
    /// `rpc_deadline` per issue and at most `max_retries` repetitions.
    pub fn new(
        max_in_flight: usize,
        rpc_deadline: Duration,
        max_retries: u16,
        trace: Option<TraceBuffer>,
    ) -> Window {
        let max_in_flight = max_in_flight.max(1);
        Window {
            max_in_flight,
            rpc_deadline,
            max_retries,
            limits: Limits::default(),
            active: HashMap::with_capacity(max_in_flight * 2),
            parked: Vec::new(),
            done: VecDeque::new(),
            next_id: 1,
            scan: Vec::with_capacity(max_in_flight),
            trace,
            counters: Counters::default(),
        }
    }

    /// Calls outstanding (issued, or waiting out a backoff).
    pub fn in_flight(&self) -> usize {
        self.active.len() + self.parked.len()
    }

    /// Whether nothing is outstanding and no outcome is waiting to be taken.
    pub fn is_idle(&self) -> bool {
        self.active.is_empty() && self.parked.is_empty() && self.done.is_empty()
    }

    /// Whether another call may be submitted.
    pub fn has_room(&self) -> bool {
        self.in_flight() < self.max_in_flight
    }

    /// The bound.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Issues `call` now. The caller keeps to the bound ([`Window::has_room`]).
    pub fn submit(&mut self, conn: &Conn, call: Call) {
        let now = Instant::now();
        let p = Pending::new(call, self.rpc_deadline, now);
        self.issue(conn, p, now);
    }

    fn issue(&mut self, conn: &Conn, mut p: Pending, now: Instant) {
        let id = self.next_id;
        self.next_id += 1;
        p.call.set_request_id(id);
        p.issued = now;
        p.deadline = now + p.limit;
        p.sent = None;
        p.got = None;
        p.recv = None;
        p.scratch = None;
        p.resume_at = None;
        let ep = match conn.endpoint(p.call.node) {
            Ok(ep) => ep,
            Err(why) => {
                let f = Failure {
                    errno: libc::ENOTCONN,
                    detail: why,
                };
                return self.fail(conn, p, f, now);
            }
        };
        let payload = match &p.call.payload {
            Some(piece) => SendBuf::Data(piece.clone()),
            None => SendBuf::Empty,
        };
        match ep.am_send(AM_REQUEST, &p.call.header, payload, SendOptions::default()) {
            Ok(req) => {
                p.send = Some(req);
                self.active.insert(id, p);
            }
            Err(e) => {
                let f = Failure {
                    errno: e.errno(),
                    detail: format!("sending the request failed: {e}"),
                };
                self.fail(conn, p, f, now);
            }
        }
    }

    /// Gives up every outstanding call (their late replies are dropped).
    pub fn abandon(&mut self) {
        self.active.clear();
        self.parked.clear();
        self.done.clear();
    }

    /// Writes buffered trace records to the trace file.
    pub fn flush_trace(&mut self) {
        if let Some(t) = &mut self.trace {
            t.flush();
        }
    }

    /// The next finished call: progresses the worker until one finishes or
    /// `until` passes (`Ok(None)`), or returns `Ok(None)` at once when
    /// nothing is outstanding. Deadlines of calls are enforced here.
    pub fn next(&mut self, conn: &Conn, until: Option<Instant>) -> Result<Option<Outcome>> {
        loop {
            if let Some(o) = self.done.pop_front() {
                return Ok(Some(o));
            }
            if self.active.is_empty() && self.parked.is_empty() {
                return Ok(None);
            }
            let now = Instant::now();
            self.harvest(conn, now);
            if !self.done.is_empty() {
                continue;
            }
            if until.is_some_and(|u| now >= u) {
                return Ok(None);
            }
            let mut wake = until.unwrap_or(now + Duration::from_secs(3600));
            for p in self.active.values() {
                wake = wake.min(p.deadline);
            }
            for p in &self.parked {
                wake = wake.min(p.resume_at.unwrap_or(now));
            }
            let replies = &conn.replies;
            let active = &self.active;
            let waited = conn.worker.wait_until(wake, "RPC replies", || {
                !replies.borrow().is_empty() || active.values().any(Pending::io_done)
            });
            match waited {
                Ok(()) => {}
                Err(e) if e.is_timeout() => {}
                Err(e) => return Err(ucx_error(&e, "progressing the client's UCX worker")),
            }
        }
    }

    /// Runs `calls` with at most `max_in_flight` outstanding and returns
    /// every outcome (completion order). A failure that `tolerate` does not
    /// accept gives up the rest and is returned as the error.
    pub fn run_all(
        &mut self,
        conn: &Conn,
        calls: Vec<Call>,
        tolerate: impl Fn(&Outcome) -> bool,
    ) -> Result<Vec<Outcome>> {
        let total = calls.len();
        let mut calls = calls.into_iter();
        let mut out = Vec::with_capacity(total);
        while out.len() < total {
            while self.has_room() {
                match calls.next() {
                    Some(c) => self.submit(conn, c),
                    None => break,
                }
            }
            let Some(o) = self.next(conn, None)? else {
                break;
            };
            if o.result.is_err() && !tolerate(&o) {
                self.abandon();
                return Err(o.result.err().unwrap_or(Error::Closed));
            }
            out.push(o);
        }
        Ok(out)
    }

    fn harvest(&mut self, conn: &Conn, now: Instant) {
        loop {
            let next = conn.replies.borrow_mut().pop_front();
            let Some(msg) = next else { break };
            self.on_reply(conn, msg, now);
        }
        let mut scan = std::mem::take(&mut self.scan);
        scan.clear();
        scan.extend(
            self.active
                .iter()
                .filter(|(_, p)| p.io_done() || p.deadline <= now)
                .map(|(id, _)| *id),
        );
        for id in scan.iter().copied() {
            let Some(mut p) = self.active.remove(&id) else {
                continue;
            };
            if p.recv.as_ref().is_some_and(UcxRequest::is_done) {
                self.on_payload(conn, p, now);
                continue;
            }
            if let Some(send) = p.send.take_if(|s| s.is_done()) {
                match send.try_take() {
                    Ok(Ok(_)) => p.sent = Some(now),
                    Ok(Err(e)) => {
                        let f = Failure {
                            errno: e.errno(),
                            detail: format!("sending the request failed: {e}"),
                        };
                        self.fail(conn, p, f, now);
                        continue;
                    }
                    Err(still) => p.send = Some(still),
                }
            }
            if p.deadline <= now {
                self.counters.timeouts += 1;
                let f = self.timeout_failure(conn, &p);
                self.fail(conn, p, f, now);
            } else {
                self.active.insert(id, p);
            }
        }
        self.scan = scan;
        let mut i = 0;
        while i < self.parked.len() {
            if self.parked[i].resume_at.is_none_or(|t| t <= now) {
                let p = self.parked.swap_remove(i);
                self.issue(conn, p, now);
            } else {
                i += 1;
            }
        }
    }

    fn timeout_failure(&self, conn: &Conn, p: &Pending) -> Failure {
        let what = if p.got.is_some() {
            "the reply's data did not arrive"
        } else if p.sent.is_some() {
            "no reply"
        } else {
            "the request was not delivered"
        };
        let mut detail = format!("{what} within {:.1} s", p.limit.as_secs_f64());
        if let Some(n) = conn.nodes.get(p.call.node as usize)
            && !n.process_alive()
        {
            detail.push_str(&format!("; the daemon process {} is gone", n.pid));
        }
        Failure {
            errno: libc::ETIMEDOUT,
            detail,
        }
    }

    fn on_reply(&mut self, conn: &Conn, msg: AmMessage, now: Instant) {
        let Ok(h) = wire::decode_header(msg.header(), &self.limits) else {
            self.counters.bad_replies += 1;
            return;
        };
        let id = h.request_id;
        let Some(mut p) = self.active.remove(&id) else {
            self.counters.late_replies += 1;
            return;
        };
        if p.got.is_some() || !h.is_reply() {
            self.counters.late_replies += 1;
            self.active.insert(id, p);
            return;
        }
        let bad = |detail: String| Failure {
            errno: libc::EBADMSG,
            detail,
        };
        let reply = match wire::decode_reply(msg.header(), &self.limits) {
            Ok((_, r)) => r,
            Err(e) => return self.fail(conn, p, bad(format!("undecodable reply: {e}")), now),
        };
        let want = p.call.label.op;
        if reply.op() != want || h.node != p.call.node {
            let f = bad(format!(
                "a {} reply from node id {} to a {want} request for node id {}",
                reply.op(),
                h.node,
                p.call.node
            ));
            return self.fail(conn, p, f, now);
        }
        if let Err(e) = h.check_payload(msg.len()) {
            return self.fail(conn, p, bad(format!("reply payload: {e}")), now);
        }
        // The daemon has the request, so a send still pending is moot.
        if let Some(send) = p.send.take()
            && send.is_done()
            && let Ok(Err(e)) = send.try_take()
        {
            let f = Failure {
                errno: e.errno(),
                detail: format!("sending the request failed: {e}"),
            };
            return self.fail(conn, p, f, now);
        }
        p.sent.get_or_insert(now);
        let (got, payload_len) = match reply {
            Reply::Error { errno, message, .. } => {
                let detail = if message.is_empty() {
                    strerror(errno)
                } else {
                    message.to_owned()
                };
                return self.fail(conn, p, Failure { errno, detail }, now);
            }
            Reply::Read { len } => (Got::Read(len), len),
            Reply::Readdir {
                count,
                next_cursor,
                eof,
                entries_len,
            } => (
                Got::Dir {
                    count,
                    next_cursor,
                    eof,
                },
                entries_len,
            ),
            Reply::Stats { json_len } => (Got::Json, json_len),
            Reply::Ping {
                time_unix_ns,
                len: 0,
            } => {
                return self.finish(conn, p, Ok(Answer::Ping(time_unix_ns)), now);
            }
            Reply::Ping { time_unix_ns, len } => (Got::Ping(time_unix_ns), len),
            Reply::Create(a) | Reply::Open(a) | Reply::Stat(a) => {
                return self.finish(conn, p, Ok(Answer::Attr(a)), now);
            }
            Reply::Write { written } => {
                return self.finish(conn, p, Ok(Answer::Written(written)), now);
            }
            Reply::Fsync | Reply::Truncate | Reply::Unlink | Reply::Shutdown => {
                return self.finish(conn, p, Ok(Answer::Done), now);
            }
        };
        let Ok(len) = usize::try_from(payload_len) else {
            return self.fail(conn, p, bad(format!("{payload_len} payload bytes")), now);
        };
        let target = match got {
            Got::Read(_) => match p.call.dest.take() {
                Some(d) if d.len() >= len => d,
                Some(d) => {
                    let f = bad(format!("{len} bytes for a read of {}", d.len()));
                    return self.fail(conn, p, f, now);
                }
                None => return self.fail(conn, p, bad("a read without a buffer".into()), now),
            },
            Got::Ping(_) if p.call.dest.as_ref().is_some_and(|d| d.len() >= len) => {
                match p.call.dest.take() {
                    Some(d) => d,
                    None => return self.fail(conn, p, bad("an echo without a buffer".into()), now),
                }
            }
            _ => {
                let mut scratch = SharedBuf::zeroed(len);
                let piece = scratch.piece(0, len);
                p.scratch = Some(scratch);
                piece
            }
        };
        p.got = Some(got);
        match msg.recv_into(target) {
            Ok(req) => {
                p.recv = Some(req);
                if p.io_done() {
                    self.on_payload(conn, p, now);
                } else {
                    self.active.insert(id, p);
                }
            }
            Err(e) => {
                let f = Failure {
                    errno: e.errno(),
                    detail: format!("receiving the reply's data failed: {e}"),
                };
                self.fail(conn, p, f, now);
            }
        }
    }

    /// The payload of a reply has arrived (or failed).
    fn on_payload(&mut self, conn: &Conn, mut p: Pending, now: Instant) {
        let Some(req) = p.recv.take() else {
            return self.fail(
                conn,
                p,
                Failure {
                    errno: libc::EIO,
                    detail: "no payload receive".into(),
                },
                now,
            );
        };
        let received = req.received_len() as u64;
        match req.try_take() {
            Ok(Ok(piece)) => drop(piece),
            Ok(Err(e)) => {
                let f = Failure {
                    errno: e.errno(),
                    detail: format!("receiving the reply's data failed: {e}"),
                };
                return self.fail(conn, p, f, now);
            }
            Err(still) => {
                p.recv = Some(still);
                let id = self.next_id;
                self.next_id += 1;
                self.active.insert(id, p);
                return;
            }
        }
        let bad = |detail: String| Failure {
            errno: libc::EBADMSG,
            detail,
        };
        let bytes = p
            .scratch
            .take()
            .and_then(|s| s.to_vec())
            .unwrap_or_default();
        let answer = match p.got.take() {
            Some(Got::Read(len)) => {
                if received < len {
                    let f = bad(format!("{received} of {len} bytes arrived"));
                    return self.fail(conn, p, f, now);
                }
                Answer::Read(len)
            }
            Some(Got::Dir {
                count,
                next_cursor,
                eof,
            }) => match wire::decode_dir_entries(&bytes, count, &self.limits) {
                Ok(list) => Answer::Dir {
                    entries: list
                        .iter()
                        .map(|e| Entry {
                            name: e.name.to_owned(),
                            mode: e.mode,
                            size: e.size,
                        })
                        .collect(),
                    next_cursor,
                    eof,
                },
                Err(e) => return self.fail(conn, p, bad(format!("readdir entries: {e}")), now),
            },
            Some(Got::Ping(t)) => Answer::Ping(t),
            Some(Got::Json) => match String::from_utf8(bytes) {
                Ok(s) => Answer::Json(s),
                Err(_) => return self.fail(conn, p, bad("stats JSON is not UTF-8".into()), now),
            },
            None => return self.fail(conn, p, bad("payload without a reply".into()), now),
        };
        self.finish(conn, p, Ok(answer), now);
    }

    fn fail(&mut self, conn: &Conn, mut p: Pending, f: Failure, now: Instant) {
        p.send = None;
        p.recv = None;
        if let Some((orig, why)) = p.probe_of.take() {
            let f = Failure {
                errno: why.errno,
                detail: format!("{}; it does not answer a ping either", why.detail),
            };
            return self.finish(conn, *orig, Err(f), now);
        }
        if retry::idempotent(p.call.label.op) && p.retries < self.max_retries {
            match retry::transience(f.errno) {
                Transience::Transient => return self.park(p, now),
                Transience::IfReachable => match conn.nodes.get(p.call.node as usize) {
                    Some(n) if n.local && n.process_alive() => return self.park(p, now),
                    Some(n) if !n.local => return self.probe(conn, p, f, now),
                    _ => {}
                },
                Transience::Permanent => {}
            }
        }
        self.finish(conn, p, Err(f), now);
    }

    fn park(&mut self, mut p: Pending, now: Instant) {
        p.retries += 1;
        self.counters.retries += 1;
        let jitter = crate::placement::fmix64(self.next_id ^ u64::from(p.call.node));
        p.resume_at = Some(now + retry::backoff(p.retries, jitter));
        p.send = None;
        p.recv = None;
        self.parked.push(p);
    }

    fn probe(&mut self, conn: &Conn, p: Pending, f: Failure, now: Instant) {
        let ping = match Call::new(
            conn,
            p.call.node,
            &Request::Ping {
                len: 0,
                echo: false,
            },
            p.call.tag,
        ) {
            Ok(c) => c,
            Err(_) => return self.finish(conn, p, Err(f), now),
        };
        let mut probe = Pending::new(ping, self.rpc_deadline.min(PROBE_LIMIT), now);
        probe.probe_of = Some((Box::new(p), f));
        self.issue(conn, probe, now);
    }

    fn finish(
        &mut self,
        conn: &Conn,
        mut p: Pending,
        result: Result<Answer, Failure>,
        now: Instant,
    ) {
        if let Some((orig, _)) = p.probe_of.take() {
            // The daemon answers: repeat the call it was probed for.
            return self.park(*orig, now);
        }
        self.counters.rpcs += 1;
        let errno = match &result {
            Ok(_) => 0,
            Err(f) => {
                self.counters.failed += 1;
                f.errno
            }
        };
        if let Some(t) = &mut self.trace {
            let send = p
                .sent
                .map_or(now - p.issued, |s| s.saturating_duration_since(p.issued));
            let since_issue = now.saturating_duration_since(p.issued);
            let bytes = match &result {
                Ok(Answer::Read(n)) => *n,
                Ok(Answer::Json(s)) => s.len() as u64,
                _ => p.call.bytes,
            };
            t.push(&Record {
                t_ns: t.t_ns(now),
                kind: Kind::RpcClient as u8,
                op: trace_op(p.call.label.op) as u8,
                node: u16::try_from(p.call.node).unwrap_or(u16::MAX),
                status: status_of(errno),
                retries: p.retries,
                bytes,
                d0: ns(send),
                d1: ns(since_issue.saturating_sub(send)),
                d2: ns(now.saturating_duration_since(p.first_issue)),
            });
        }
        let node = p.call.node;
        let result = result.map_err(|f| Error::Rpc {
            errno: f.errno,
            node: conn.node_name(node).to_owned(),
            op: p.call.label.to_string(),
            detail: f.detail,
        });
        self.done.push_back(Outcome {
            tag: p.call.tag,
            node,
            result,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_the_operation() {
        let l = Label {
            op: Op::Write,
            path: Rc::from("testfile.3"),
            chunk: Some(12),
        };
        assert_eq!(l.to_string(), "write testfile.3 chunk 12");
        let l = Label {
            op: Op::Ping,
            path: Rc::from(""),
            chunk: None,
        };
        assert_eq!(l.to_string(), "ping");
    }

    #[test]
    fn every_op_has_a_trace_code() {
        let codes: std::collections::HashSet<u8> =
            Op::ALL.iter().map(|&o| trace_op(o) as u8).collect();
        assert_eq!(codes.len(), Op::ALL.len());
    }
}
