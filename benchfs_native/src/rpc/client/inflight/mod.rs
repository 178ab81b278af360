//! The bounded window of outstanding RPCs.
//!
//! Every call gets a fresh request id; replies (`AM_REPLY`) are matched by
//! it, so they may arrive in any order. At most `max_in_flight` calls are
//! outstanding (a call waiting out a retry backoff counts). Each issue has
//! a deadline (`rpc_deadline`); a call fails with an error naming the node,
//! the operation and the cause, or completes with its [`Answer`].
//! Idempotent calls are repeated on transient errors (module `retry`); an
//! `ETIMEDOUT` is repeated only while the daemon is still reachable: its
//! process exists and is not stopped (same host) or it answers a ping
//! (other hosts). A call slow to be answered makes the window ping its
//! node with a short deadline (`liveness`): a node that does not answer
//! fails its calls at once, by name, and gets no repeated call.
//!
//! A read reply's payload goes straight into the call's destination piece
//! (eager: copied; rendezvous: received into it by UCX). A call that is
//! given up leaves its UCX requests, and the pieces they own, to UCX: a
//! late reply is dropped by request id, and a late transfer writes into
//! memory that is still allocated.
//!
//! * `call`: what a caller hands in ([`Call`]) and gets back ([`Outcome`]).
//! * `pending`: a call in flight, with its UCX requests.
//! * `reply`: matching a reply to its call and receiving its payload.
//! * `liveness`: pings of nodes that are slow to answer.

mod call;
mod liveness;
mod pending;
mod reply;

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

use benchfs_ucx::SendOptions;
use rustc_hash::{FxBuildHasher, FxHashMap};

use super::connect::Conn;
use super::retry::{self, Transience};
use crate::error::{Error, Result};
use crate::rpc::session::AM_REQUEST;
use crate::rpc::trace_op;
use crate::rpc::transport::ucx_error;
use crate::rpc::wire::{Limits, Request};
use crate::trace::format::status_of;
use crate::trace::{Kind, Record, TraceBuffer};

pub use self::call::{Answer, Call, Counters, Entry, Outcome};
use self::liveness::{Liveness, PING_LIMIT, SLOW_AFTER};
use self::pending::{Failure, Pending, SendBuf, ns};

/// Longest wait for a ping that decides whether a timed-out daemon is
/// still reachable.
const PROBE_LIMIT: Duration = Duration::from_secs(2);

/// The window of outstanding calls of one client.
pub struct Window {
    max_in_flight: usize,
    rpc_deadline: Duration,
    max_retries: u16,
    limits: Limits,
    /// By request id, which this window chose itself: a fast hash does.
    active: FxHashMap<u64, Pending>,
    parked: Vec<Pending>,
    done: VecDeque<Outcome>,
    next_id: u64,
    scan: Vec<u64>,
    trace: Option<TraceBuffer>,
    counters: Counters,
    liveness: Liveness,
    /// When an unanswered call makes the window ping its node.
    slow_after: Duration,
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
            active: FxHashMap::with_capacity_and_hasher(max_in_flight * 2, FxBuildHasher),
            parked: Vec::new(),
            done: VecDeque::new(),
            next_id: 1,
            scan: Vec::with_capacity(max_in_flight),
            trace,
            counters: Counters::default(),
            liveness: Liveness::default(),
            slow_after: SLOW_AFTER.min(rpc_deadline / 2),
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
        self.submit_at(conn, call, Instant::now());
    }

    /// [`Window::submit`] for a caller that has just read the clock.
    pub fn submit_at(&mut self, conn: &Conn, call: Call, now: Instant) {
        let p = Pending::new(call, self.rpc_deadline, now);
        self.issue(conn, p, now);
    }

    fn issue(&mut self, conn: &Conn, mut p: Pending, now: Instant) {
        let id = self.next_id;
        self.next_id += 1;
        p.call.set_request_id(id);
        p.issued = now;
        p.deadline = crate::deadline::after_from(now, p.limit);
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
        self.liveness.forget_probes();
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
                let slow = p.issued + self.slow_after;
                if slow > now && !p.liveness_probe {
                    wake = wake.min(slow);
                }
            }
            for p in &self.parked {
                wake = wake.min(p.resume_at.unwrap_or(now));
            }
            // Every transfer that finishes from now on runs a UCX callback,
            // which the worker counts: the spin watches that count and the
            // reply queue instead of asking each outstanding call per turn.
            let seen = conn.worker.completions();
            if self.active.values().any(Pending::io_done) {
                continue;
            }
            let replies = &conn.replies;
            let worker = &conn.worker;
            let waited = worker.wait_until(wake, "RPC replies", || {
                !replies.borrow().is_empty() || worker.completions() != seen
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
        let mut send_failed = Vec::new();
        for (&id, p) in &mut self.active {
            // A finished send is settled in place: every call passes here
            // once, and taking it out of the map and back costs more.
            if let Some(send) = p.send.take_if(|s| s.is_done()) {
                match send.try_take() {
                    Ok(Ok(_)) => p.sent = Some(now),
                    Ok(Err(e)) => send_failed.push((id, e)),
                    Err(still) => p.send = Some(still),
                }
            }
            if p.recv_done() || p.deadline <= now {
                scan.push(id);
            }
        }
        for (id, e) in send_failed {
            // A reply whose data has arrived outweighs its failed send.
            if self.active.get(&id).is_some_and(Pending::recv_done) {
                continue;
            }
            if let Some(p) = self.active.remove(&id) {
                let f = Failure {
                    errno: e.errno(),
                    detail: format!("sending the request failed: {e}"),
                };
                self.fail(conn, p, f, now);
            }
        }
        for id in &scan {
            let Some(p) = self.active.remove(id) else {
                continue;
            };
            if p.recv_done() {
                self.on_payload(conn, p, now);
            } else {
                self.counters.timeouts += 1;
                let f = self.timeout_failure(conn, &p);
                self.fail(conn, p, f, now);
            }
        }
        self.scan = scan;
        self.probe_slow(conn, now);
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
        if let Some(n) = conn.nodes.get(p.call.node as usize) {
            if !n.process_alive() {
                detail.push_str(&format!("; the daemon process {} is gone", n.pid));
            } else if n.process_stopped() {
                detail.push_str(&format!(
                    "; the daemon process {} is stopped (state T in /proc/{}/stat: SIGSTOP or a debugger)",
                    n.pid, n.pid
                ));
            }
        }
        Failure {
            errno: libc::ETIMEDOUT,
            detail,
        }
    }

    /// Pings the nodes of calls that wait longer than `slow_after`.
    fn probe_slow(&mut self, conn: &Conn, now: Instant) {
        let mut nodes: Vec<u32> = self
            .active
            .values()
            .filter(|p| !p.liveness_probe && p.probe_of.is_none())
            .filter(|p| {
                self.liveness
                    .due(p.call.node, p.issued, self.slow_after, now)
            })
            .map(|p| p.call.node)
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        for node in nodes {
            let ping = Request::Ping {
                len: 0,
                echo: false,
            };
            let Ok(call) = Call::new(conn, node, &ping, 0) else {
                continue;
            };
            let mut probe = Pending::new(call, self.rpc_deadline.min(PING_LIMIT), now);
            probe.liveness_probe = true;
            self.liveness.probing(node);
            self.issue(conn, probe, now);
        }
    }

    /// Fails every call outstanding on `node` (not answering its ping) at
    /// once, without repeating any.
    fn fail_node(&mut self, conn: &Conn, node: u32, why: &str, now: Instant) {
        let ids: Vec<u64> = self
            .active
            .iter()
            .filter(|(_, p)| p.call.node == node && !p.liveness_probe)
            .map(|(id, _)| *id)
            .collect();
        let mut calls: Vec<Pending> = ids
            .into_iter()
            .filter_map(|id| self.active.remove(&id))
            .collect();
        let (here, rest): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut self.parked)
            .into_iter()
            .partition(|p| p.call.node == node);
        self.parked = rest;
        calls.extend(here);
        for mut p in calls {
            let waited = now.saturating_duration_since(p.first_issue).as_secs_f64();
            let what = if p.resume_at.is_some() {
                "waiting to be repeated"
            } else if p.got.is_some() {
                "the reply's data had not arrived"
            } else if p.sent.is_some() {
                "no reply yet"
            } else {
                "the request not delivered yet"
            };
            p.send = None;
            p.recv = None;
            let f = Failure {
                errno: libc::ETIMEDOUT,
                detail: format!("{what} after {waited:.1} s; {why}"),
            };
            self.finish(conn, p, Err(f), now);
        }
    }

    fn fail(&mut self, conn: &Conn, mut p: Pending, f: Failure, now: Instant) {
        p.send = None;
        p.recv = None;
        if p.liveness_probe {
            let node = p.call.node;
            self.liveness.probe_over(node);
            let silent = p.sent.is_none()
                || matches!(
                    f.errno,
                    libc::ETIMEDOUT | libc::ECONNRESET | libc::ENOTCONN | libc::EHOSTUNREACH
                );
            if !silent {
                // An error reply: the node's loop runs.
                self.liveness.answered(node, now);
                return;
            }
            let mut why = self.liveness.unresponsive(conn, node, p.limit);
            if f.errno != libc::ETIMEDOUT {
                why.push_str(&format!(" (the ping: {})", f.detail));
            }
            return self.fail_node(conn, node, &why, now);
        }
        if let Some(why) = self.liveness.why_unresponsive(p.call.node) {
            // Known unresponsive: never repeated into it.
            let f = Failure {
                errno: f.errno,
                detail: format!("{}; {why}", f.detail),
            };
            return self.finish(conn, p, Err(f), now);
        }
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
                    Some(n) if n.local && n.process_alive() && !n.process_stopped() => {
                        return self.park(p, now);
                    }
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
        if p.liveness_probe {
            self.liveness.probe_over(p.call.node);
            if result.is_ok() {
                self.liveness.answered(p.call.node, now);
            }
            return;
        }
        if result.is_ok() {
            self.liveness.answered(p.call.node, now);
        }
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
                Ok(Answer::Json(s) | Answer::Link(_, s)) => s.len() as u64,
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
