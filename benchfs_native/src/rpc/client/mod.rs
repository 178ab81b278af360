//! The RPC client: POSIX-like operations and the IOR-style bulk phase over
//! the daemons of one membership.
//!
//! * `connect`: membership wait, UCX worker, one session per daemon.
//! * `inflight`: the bounded window of outstanding RPCs, replies matched by
//!   request id, deadlines, retries, the `rpc_client` trace records.
//! * `ops`: create, open, write, read, fsync, close, stat, unlink, readdir,
//!   truncate, ping, stats, shutdown (placement per docs/PLACEMENT.md).
//! * `namespace`: mkdir, rmdir, rename, setattr, statfs (docs/NAMESPACE.md).
//! * `links`: hard links and their link counts.
//! * `phase`: the bulk write or read phase ([`PhaseSpec`]).
//! * `metadata`: the mdtest-style metadata phase ([`MetadataSpec`]).
//! * `progress`: the live progress record of either.
//! * `split`, `pattern`, `retry`, `buf`: the pure parts.
//!
//! A [`Client`] owns its UCX worker on the calling thread (no threads of
//! its own); it is `!Send`.

mod bench;
mod buf;
mod connect;
mod inflight;
mod links;
mod metadata;
mod namespace;
mod ops;
mod pattern;
mod phase;
mod progress;
mod retry;
mod split;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use bench::PingBench;
pub use buf::{Piece, SharedBuf};
pub use inflight::{Answer, Counters, Entry};
pub use metadata::{ItemDone, ItemKind, MetadataOp, MetadataResult, MetadataSpec, run_items};
pub use namespace::{SetAttr, StatFs};
pub use ops::MAX_IO;
pub use pattern::Pattern;
pub use phase::{PhaseResult, PhaseSpec};
pub use progress::{PROGRESS_EVERY, Progress};
pub use split::{ChunkPiece, split};

pub use crate::rpc::wire::{Attr, FileKind};

use crate::error::{Error, Result};
use crate::membership::Expected;
use crate::placement::Placement;
use crate::rpc::transport::Transport;
use crate::trace::{TraceBuffer, TraceConfig, TraceFile};

/// Settings of [`Client::connect`].
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// UCX transports (must match the daemons').
    pub transport: Transport,
    /// Deadline of the membership wait and the session handshake.
    pub connect_deadline: Duration,
    /// Deadline of each RPC issue.
    pub rpc_deadline: Duration,
    /// Most RPCs outstanding at once.
    pub max_in_flight: usize,
    /// Most repetitions of an idempotent RPC after transient errors.
    pub retries: u16,
    /// Accept a partial membership at the connect deadline.
    pub allow_partial: bool,
    /// The client's name (daemon logs, trace file name).
    pub name: String,
    /// Record `rpc_client` events into this directory.
    pub trace_dir: Option<PathBuf>,
    /// fsync on close: `None` asks the daemons (their stats' `durability`).
    pub fsync_on_close: Option<bool>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            transport: Transport::Auto,
            connect_deadline: Duration::from_secs(60),
            rpc_deadline: Duration::from_secs(30),
            max_in_flight: 16,
            retries: 3,
            allow_partial: false,
            name: "client".to_owned(),
            trace_dir: None,
            fsync_on_close: None,
        }
    }
}

/// A daemon of the membership, as the client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    /// Its node name.
    pub node_name: String,
    /// Its placement id.
    pub node_id: u32,
    /// Its host.
    pub host: String,
}

/// An open file.
#[derive(Debug, Clone)]
struct OpenFile {
    path: std::rc::Rc<str>,
    /// Its id.
    ino: u64,
    /// Its data object's name (`@<id>`, docs/NAMESPACE.md).
    data: std::rc::Rc<str>,
    /// The node of its chunk 0 (placement of the id).
    start: u32,
    flags: i32,
}

/// An open file apart from the client that opened it: the daemons keep no
/// state per open file, so any client of the same membership reads,
/// writes, syncs and closes it ([`Client::detach`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRef {
    /// Its path when opened (names it in errors and traces).
    pub path: String,
    /// Its id (names its data, wherever the path moves).
    pub ino: u64,
    /// The `open(2)` flags it was opened with (access mode, `O_SYNC`).
    pub flags: i32,
}

/// A client of one membership of daemons.
#[derive(Debug)]
pub struct Client {
    conn: connect::Conn,
    window: inflight::Window,
    placement: Placement,
    files: HashMap<u64, OpenFile>,
    next_handle: u64,
    options: ClientOptions,
    fsync_on_close: Option<bool>,
    /// Owner (uid, gid) of the files and directories it creates.
    creator: (u32, u32),
    /// The last read's buffer, reused by the next (no allocation and
    /// zeroing per read).
    read_buf: Option<SharedBuf>,
    /// The files whose homes this client told of their data.
    data_marks: ops::DataMarks,
}

/// A trace node name from a client name: `[A-Za-z0-9._-]`, at most 64.
fn trace_node(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if s.is_empty() || s.starts_with('.') {
        s.insert(0, 'c');
        s.truncate(64);
    }
    s
}

impl Client {
    /// Waits until the `expected` daemons have registered in `registry_dir`
    /// and opens a session with each (all within
    /// `options.connect_deadline`).
    pub fn connect(
        registry_dir: &Path,
        expected: Expected,
        options: ClientOptions,
    ) -> Result<Client> {
        if options.max_in_flight == 0 {
            return Err(Error::invalid("max_in_flight", "must be at least 1"));
        }
        if options.rpc_deadline.is_zero() {
            return Err(Error::invalid("rpc_deadline", "must be positive"));
        }
        let trace = match &options.trace_dir {
            Some(dir) => {
                let cfg = TraceConfig {
                    dir: dir.clone(),
                    node: trace_node(&options.name),
                    node_id: 0,
                };
                Some(TraceBuffer::new(TraceFile::open(&cfg, "client")?))
            }
            None => None,
        };
        let deadline = crate::deadline::after(options.connect_deadline);
        let conn = connect::connect(&connect::ConnectSpec {
            registry_dir,
            expected: &expected,
            transport: options.transport,
            deadline,
            allow_partial: options.allow_partial,
            name: &options.name,
            grace: options.connect_deadline,
            session_key: None,
        })?;
        let nodes = u32::try_from(conn.nodes.len()).unwrap_or(u32::MAX);
        let placement = Placement::new(nodes)?;
        let window = inflight::Window::new(
            options.max_in_flight,
            options.rpc_deadline,
            options.retries,
            trace,
        );
        Ok(Client {
            conn,
            window,
            placement,
            files: HashMap::new(),
            next_handle: 1,
            fsync_on_close: options.fsync_on_close,
            creator: (crate::sys::effective_uid(), crate::sys::effective_gid()),
            read_buf: None,
            data_marks: ops::DataMarks::default(),
            options,
        })
    }

    /// The daemons, by node id.
    pub fn nodes(&self) -> Vec<NodeInfo> {
        self.conn
            .nodes
            .iter()
            .map(|n| NodeInfo {
                node_name: n.name.clone(),
                node_id: n.id,
                host: n.host.clone(),
            })
            .collect()
    }

    /// The daemons' chunk size.
    pub fn chunk_size(&self) -> u64 {
        self.conn.chunk_size
    }

    /// The placement over the daemons.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// The options it was connected with.
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// RPC counters so far.
    pub fn counters(&self) -> Counters {
        self.window.counters()
    }

    /// How many empty progress calls a wait for replies spins through
    /// before it sleeps on the worker's event fd (default:
    /// `benchfs_ucx::DEFAULT_SPIN_ITERATIONS`). Fewer leave the cores to
    /// other threads sooner, at the cost of a wake-up when the reply comes.
    pub fn set_wait_spin(&self, iterations: u32) {
        self.conn.worker.set_spin_iterations(iterations);
    }

    /// The empty progress calls a wait for replies spins through (see
    /// [`Client::set_wait_spin`]).
    pub fn wait_spin(&self) -> u32 {
        self.conn.worker.spin_iterations()
    }

    /// Makes a wait for replies yield the core every `iterations` empty
    /// progress calls of its spin (0, the default: never), so that a
    /// thread woken on the same core (a daemon sharing it) runs at once.
    pub fn set_wait_yield(&self, iterations: u32) {
        self.conn.worker.set_spin_yield(iterations);
    }

    /// Whether the sessions are still open.
    pub fn is_connected(&self) -> bool {
        !self.conn.is_closed()
    }

    /// Ends the sessions, closes the endpoints and flushes the trace.
    /// Idempotent; later operations fail with `ENOTCONN`.
    pub fn disconnect(&mut self) {
        self.window.abandon();
        self.window.flush_trace();
        if !self.conn.is_closed() {
            self.conn.close(Duration::from_secs(1), true);
        }
        self.files.clear();
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.disconnect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_node_names_are_file_safe() {
        assert_eq!(trace_node("rank3"), "rank3");
        assert_eq!(trace_node("node01/rank 3"), "node01_rank_3");
        assert_eq!(trace_node(""), "c");
        assert_eq!(trace_node(".x"), "c.x");
        assert_eq!(trace_node(&"a".repeat(100)).len(), 64);
        assert!(crate::trace::writer::validate_node(&trace_node("ö/..")).is_ok());
    }
}
