//! Connecting: wait for the membership, open the worker, and open a session
//! with every daemon at once (docs/WIRE_PROTOCOL.md, "Sessions").

use std::cell::RefCell;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use benchfs_ucx::{
    AmMessage, Context, Endpoint, EndpointOptions, ErrorMode, SendOptions, Worker, WorkerAddress,
};

use crate::error::{Error, Result};
use crate::membership::{self, Expected, Record, WaitOptions};
use crate::placement::fmix64;
use crate::rpc::members;
use crate::rpc::session::{self, AM_REPLY, AM_SESSION, NONCE_LEN, Session};
use crate::rpc::session_key::{self, SessionKey, TAG_LEN};
use crate::rpc::transport::{Transport, ucx_error};
use crate::rpc::wire;

/// A daemon the client has a session with.
#[derive(Debug)]
pub struct Node {
    /// Placement id (its index in [`Conn::nodes`]).
    pub id: u32,
    /// Node name (from its record and its accept).
    pub name: String,
    /// Host it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// On this host: liveness is checked through its pid.
    pub local: bool,
    /// The client's channel on it.
    pub channel: u16,
    /// The channel's token from the accept (in every request header).
    pub token: u64,
    /// Endpoint to it (`None` once closed).
    pub ep: Option<Endpoint>,
}

impl Node {
    /// Whether the daemon process still exists (always true for a remote
    /// daemon: that is decided by a ping). A zombie counts as gone.
    pub fn process_alive(&self) -> bool {
        if !self.local || self.pid == 0 {
            return true;
        }
        match std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            Ok(stat) => !matches!(stat_state(&stat), Some("Z" | "X")),
            Err(e) => e.kind() != std::io::ErrorKind::NotFound,
        }
    }

    /// Whether the daemon process is on this host and stopped (state `T`
    /// or `t` in `/proc/<pid>/stat`: SIGSTOP or a debugger): it cannot
    /// answer until it is continued.
    pub fn process_stopped(&self) -> bool {
        if !self.local || self.pid == 0 {
            return false;
        }
        std::fs::read_to_string(format!("/proc/{}/stat", self.pid))
            .is_ok_and(|stat| matches!(stat_state(&stat), Some("T" | "t")))
    }
}

/// The state field of a `/proc/<pid>/stat` line: it follows the command
/// name, which may contain ')'.
fn stat_state(stat: &str) -> Option<&str> {
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
}

/// Incoming active messages of one id, queued by the handler.
pub type Inbox = Rc<RefCell<VecDeque<AmMessage>>>;

/// The client's transport state: the worker (owned by the calling thread),
/// one session per daemon, and the queues its handlers fill.
#[derive(Debug)]
pub struct Conn {
    /// Nodes by id.
    pub nodes: Vec<Node>,
    /// Replies (`AM_REPLY`).
    pub replies: Inbox,
    /// Session messages (`AM_SESSION`).
    pub sessions: Inbox,
    /// Chosen at connect, sent in every session message.
    pub client_id: u64,
    /// Chunk size all daemons announced.
    pub chunk_size: u64,
    /// The members file the membership came from (`None`: the records).
    pub members_file: Option<PathBuf>,
    // Declared last: dropped after the endpoints and queues above.
    /// The worker.
    pub worker: Worker,
    _context: Context,
}

fn new_client_id() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = membership::Record::now_unix_ns();
    fmix64(u64::from(std::process::id()) << 32 ^ t ^ fmix64(n + 1))
}

fn queue(worker: &Worker, id: u16) -> Result<Inbox> {
    let q: Inbox = Rc::new(RefCell::new(VecDeque::new()));
    let sink = Rc::clone(&q);
    worker
        .set_am_handler(id, move |m| sink.borrow_mut().push_back(m))
        .map_err(|e| ucx_error(&e, "AM handler"))?;
    Ok(q)
}

fn names(nodes: &[&str]) -> String {
    nodes.join(", ")
}

/// Checks that the records' ids are exactly `0..N`.
fn check_ids(records: &[Record]) -> Result<()> {
    let mut ids: Vec<(u32, &str)> = records
        .iter()
        .map(|r| (r.node_id, r.node_name.as_str()))
        .collect();
    ids.sort_unstable();
    for (want, (id, name)) in ids.iter().enumerate() {
        if *id as usize != want {
            return Err(Error::invalid(
                "membership",
                format!(
                    "node ids must be 0..{}: {name} has id {id}, id {want} is missing",
                    records.len()
                ),
            ));
        }
    }
    Ok(())
}

/// Settings of [`connect`].
#[derive(Debug, Clone)]
pub struct ConnectSpec<'a> {
    /// Registry directory.
    pub registry_dir: &'a Path,
    /// Who to wait for.
    pub expected: &'a Expected,
    /// Transport.
    pub transport: Transport,
    /// Deadline of the whole connect (membership and sessions).
    pub deadline: Instant,
    /// Accept a partial membership at the deadline.
    pub allow_partial: bool,
    /// The client's name in the daemons' logs.
    pub name: &'a str,
    /// Least time left for the session handshake after the membership
    /// wait (at most 5 s are used).
    pub grace: Duration,
    /// The session key; `None`: the environment's or the registry's
    /// ([`session_key::load`]).
    pub session_key: Option<&'a SessionKey>,
}

/// Waits for the membership, opens the worker and a session with every
/// daemon. Fails at the deadline naming the daemons that did not register
/// or did not answer.
pub fn connect(spec: &ConnectSpec<'_>) -> Result<Conn> {
    let mut key = match spec.session_key {
        Some(k) => Some(k.clone()),
        None => session_key::load(spec.registry_dir)?,
    };
    // One file when the orchestrator wrote it; else the records, waited on.
    let (mut records, members_file) = match members::read(
        spec.registry_dir,
        spec.expected,
        key.as_ref(),
        wire::VERSION,
    )? {
        Some(records) => (records, Some(members::path(spec.registry_dir))),
        None => {
            let wait = WaitOptions {
                allow_partial: spec.allow_partial,
                protocol_version: Some(wire::VERSION),
                ..WaitOptions::default()
            };
            let records =
                membership::wait_for_with(spec.registry_dir, spec.expected, spec.deadline, &wait)?;
            // The first daemon creates the key file: read it once they are there.
            if key.is_none() {
                key = session_key::load(spec.registry_dir)?;
            }
            (records, None)
        }
    };
    records.sort_by_key(|r| r.node_id);
    check_ids(&records)?;
    let (context, worker) = spec.transport.open(spec.name)?;
    let replies = queue(&worker, AM_REPLY)?;
    let sessions = queue(&worker, AM_SESSION)?;
    let address = worker
        .address()
        .map_err(|e| ucx_error(&e, "UCX worker address"))?;
    let client_id = new_client_id();
    let here = crate::sys::hostname().unwrap_or_default();
    let mut nodes = Vec::with_capacity(records.len());
    let mut sends = Vec::with_capacity(records.len());
    // Without a key the connect goes out unsigned: the daemons refuse it
    // and the error says so, naming the registry.
    let mut nonce = [0u8; NONCE_LEN];
    crate::sys::fill_random(&mut nonce)
        .map_err(|e| Error::from_io(&e, "draw a connect nonce", "getrandom"))?;
    let unsigned = session::encode(&Session::Connect {
        client_id,
        client_name: spec.name,
        address: address.as_bytes(),
        time_unix_ns: Record::now_unix_ns(),
        nonce,
        tag: [0; TAG_LEN],
    });
    for r in &records {
        let mut hello = unsigned.clone();
        session::sign_connect(&mut hello, key.as_ref(), &r.node_name);
        let opts = EndpointOptions {
            error_mode: ErrorMode::Deadline,
            name: Some(format!("{}->{}", spec.name, r.node_name)),
        };
        let ep = worker
            .connect(&WorkerAddress::from_bytes(r.worker_address.clone()), opts)
            .map_err(|e| connect_error(e.errno(), &r.node_name, format!("endpoint: {e}")))?;
        let send = ep
            // A refusal for a bad key comes back on this endpoint (the
            // daemon opens none to an address it cannot trust).
            .am_send(
                AM_SESSION,
                &hello,
                Vec::new(),
                SendOptions::default().with_reply(),
            )
            .map_err(|e| connect_error(e.errno(), &r.node_name, format!("sending connect: {e}")))?;
        sends.push(send);
        nodes.push(Node {
            id: r.node_id,
            name: r.node_name.clone(),
            host: r.host.clone(),
            pid: r.pid,
            local: !here.is_empty() && r.host == here,
            channel: 0,
            token: 0,
            ep: Some(ep),
        });
    }
    let mut conn = Conn {
        nodes,
        replies,
        sessions,
        client_id,
        chunk_size: 0,
        members_file,
        worker,
        _context: context,
    };
    // A partial membership is returned at the deadline: the daemons that
    // are there still get a moment to accept.
    let grace = spec.grace.min(Duration::from_secs(5));
    let accepted = wait_accepts(
        &mut conn,
        spec.deadline.max(Instant::now() + grace),
        spec.registry_dir,
    );
    drop(sends);
    if let Err(e) = accepted {
        conn.close(Duration::from_millis(200), false);
        return Err(e);
    }
    Ok(conn)
}

fn connect_error(errno: i32, node: &str, detail: String) -> Error {
    Error::Rpc {
        errno,
        node: node.to_owned(),
        op: "connect".to_owned(),
        detail,
    }
}

/// Why a daemon refused a session, in words.
fn refusal_text(status: i32, node: &str, registry_dir: &Path) -> String {
    match status {
        libc::EACCES => format!(
            "session refused by node {node}: wrong or missing session key (registry {}; the key is ${} or {})",
            registry_dir.display(),
            session_key::KEY_ENV,
            session_key::key_path(registry_dir).display()
        ),
        libc::EKEYEXPIRED => format!(
            "session refused by node {node}: the connect's time is outside the daemon's window (clocks differ by more than a minute?)"
        ),
        _ => "the daemon refused the session".to_owned(),
    }
}

/// Collects one accept per node; checks statuses and chunk sizes.
fn wait_accepts(conn: &mut Conn, deadline: Instant, registry_dir: &Path) -> Result<()> {
    let n = conn.nodes.len();
    let mut chunk: Vec<Option<u64>> = vec![None; n];
    let mut got = 0usize;
    while got < n {
        let sessions = Rc::clone(&conn.sessions);
        let waited = conn.worker.wait_until(deadline, "session accepts", || {
            !sessions.borrow().is_empty()
        });
        if let Err(e) = waited {
            if !e.is_timeout() {
                return Err(ucx_error(&e, "waiting for session accepts"));
            }
            let missing: Vec<&str> = conn
                .nodes
                .iter()
                .zip(&chunk)
                .filter(|(_, c)| c.is_none())
                .map(|(nd, _)| nd.name.as_str())
                .collect();
            return Err(connect_error(
                libc::ETIMEDOUT,
                &names(&missing),
                format!(
                    "no session accept from {} of {n} daemons by the connect deadline{}",
                    missing.len(),
                    conn.members_file
                        .as_ref()
                        .map(|p| format!(" (addresses from {}: stale?)", p.display()))
                        .unwrap_or_default()
                ),
            ));
        }
        loop {
            let next = conn.sessions.borrow_mut().pop_front();
            let Some(msg) = next else { break };
            let Ok(Session::Accept {
                client_id,
                channel,
                status,
                node_id,
                chunk_size,
                node_name,
                token,
            }) = session::decode(msg.header())
            else {
                continue;
            };
            if client_id != conn.client_id {
                continue;
            }
            let Some(node) = conn.nodes.get_mut(node_id as usize) else {
                return Err(connect_error(
                    libc::EPROTO,
                    node_name,
                    format!("accept from node id {node_id}, which is not in the membership"),
                ));
            };
            if node.name != node_name {
                return Err(connect_error(
                    libc::EPROTO,
                    &node.name,
                    format!("node id {node_id} answered as {node_name:?}"),
                ));
            }
            if status != 0 {
                let text = refusal_text(status, &node.name, registry_dir);
                return Err(connect_error(status, &node.name, text));
            }
            if chunk[node_id as usize].is_none() {
                got += 1;
            }
            chunk[node_id as usize] = Some(chunk_size);
            node.channel = channel;
            node.token = token;
        }
    }
    let sizes: Vec<u64> = chunk.iter().map(|c| c.unwrap_or(0)).collect();
    let first = sizes.first().copied().unwrap_or(0);
    if let Some(i) = sizes.iter().position(|&c| c != first || c == 0) {
        return Err(connect_error(
            libc::EPROTO,
            &conn.nodes[i].name,
            format!(
                "announces chunk size {}, but {} announces {first}",
                sizes[i], conn.nodes[0].name
            ),
        ));
    }
    conn.chunk_size = first;
    Ok(())
}

impl Conn {
    /// Ends the sessions (a disconnect to each daemon when `say_bye`),
    /// closes the endpoints within `budget` in all, and stops queueing
    /// messages. Idempotent.
    pub fn close(&mut self, budget: Duration, say_bye: bool) {
        let deadline = crate::deadline::after(budget);
        let mut byes = Vec::new();
        if say_bye {
            for n in &self.nodes {
                if let Some(ep) = &n.ep {
                    let msg = session::encode(&Session::Disconnect {
                        client_id: self.client_id,
                        channel: n.channel,
                        token: n.token,
                    });
                    if let Ok(r) = ep.am_send(AM_SESSION, &msg, Vec::new(), SendOptions::default())
                    {
                        byes.push(r);
                    }
                }
            }
            let _ = self.worker.wait_until(deadline, "disconnect sends", || {
                byes.iter().all(|r| r.is_done())
            });
        }
        drop(byes);
        for n in &mut self.nodes {
            if let Some(ep) = n.ep.take() {
                let _ = ep.close(deadline.max(Instant::now() + Duration::from_millis(1)));
            }
        }
        // Break the worker -> handler -> queue -> message -> worker cycle.
        let _ = self.worker.clear_am_handler(AM_REPLY);
        let _ = self.worker.clear_am_handler(AM_SESSION);
        self.replies.borrow_mut().clear();
        self.sessions.borrow_mut().clear();
    }

    /// Whether the sessions are closed.
    pub fn is_closed(&self) -> bool {
        self.nodes.iter().all(|n| n.ep.is_none())
    }

    /// The endpoint of node `id`, or `ENOTCONN` naming it.
    pub fn endpoint(&self, id: u32) -> std::result::Result<&Endpoint, String> {
        match self.nodes.get(id as usize) {
            Some(n) => {
                n.ep.as_ref()
                    .ok_or_else(|| "the session is closed".to_owned())
            }
            None => Err(format!("no node with id {id}")),
        }
    }

    /// Node name of `id` (for errors).
    pub fn node_name(&self, id: u32) -> &str {
        self.nodes.get(id as usize).map_or("?", |n| n.name.as_str())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn rec(name: &str, id: u32) -> Record {
        Record {
            node_name: name.into(),
            node_id: id,
            daemon_index: 0,
            pid: 1,
            host: "h".into(),
            worker_address: vec![1],
            data_dir: "/d".into(),
            start_time_unix_ns: 0,
            protocol_version: wire::VERSION,
        }
    }

    #[test]
    fn ids_must_be_dense() {
        assert!(check_ids(&[rec("a", 1), rec("b", 0)]).is_ok());
        let e = check_ids(&[rec("a", 0), rec("c", 2)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("c has id 2") && e.contains("id 1 is missing"),
            "{e}"
        );
    }

    #[test]
    fn client_ids_differ() {
        assert_ne!(new_client_id(), new_client_id());
    }
}
