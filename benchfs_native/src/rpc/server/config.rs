//! How a server behaves: its settings, checked ([`ServerConfig`]), and
//! when it makes data durable ([`Durability`]).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use super::idle::{DEFAULT_BULK_SPIN, MAX_BULK_SPIN};
use crate::error::{Error, Result};
use crate::rpc::session_key::SessionKey;
use crate::trace::TraceFile;

/// When written data is made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Only on an fsync request or a write with the `SYNC` flag.
    #[default]
    None,
    /// Also every file at shutdown.
    FsyncOnClose,
    /// Also every write before its reply (and every file at shutdown).
    FsyncEachWrite,
}

impl Durability {
    /// The name used in configs.
    pub fn name(self) -> &'static str {
        match self {
            Durability::None => "none",
            Durability::FsyncOnClose => "fsync_on_close",
            Durability::FsyncEachWrite => "fsync_each_write",
        }
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Durability {
    type Err = Error;

    fn from_str(s: &str) -> Result<Durability> {
        match s {
            "none" => Ok(Durability::None),
            "fsync_on_close" => Ok(Durability::FsyncOnClose),
            "fsync_each_write" => Ok(Durability::FsyncEachWrite),
            other => Err(Error::invalid(
                "durability",
                format!("must be none, fsync_on_close or fsync_each_write, got {other:?}"),
            )),
        }
    }
}

/// Largest `max_concurrency`.
pub const MAX_CONCURRENCY: usize = 4096;
/// Default `channel_idle_reclaim`.
pub const DEFAULT_CHANNEL_IDLE_RECLAIM: Duration = Duration::from_secs(600);
/// Default `channel_stall_reclaim`.
pub const DEFAULT_CHANNEL_STALL_RECLAIM: Duration = Duration::from_secs(60);
/// Default `max_queued`: requests waiting for a storage thread.
pub const DEFAULT_MAX_QUEUED: usize = 65_536;

/// How a server behaves.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// This daemon's placement id (requests for another id get ESTALE).
    pub node_id: u32,
    /// This daemon's name (accept messages, log lines).
    pub node_name: String,
    /// Requests served at once (storage threads, data buffers);
    /// 1..=[`MAX_CONCURRENCY`].
    pub max_concurrency: usize,
    /// Client sessions open at once (1..=65535); more get `EBUSY`.
    pub max_channels: u16,
    /// When every channel is taken, a channel idle this long is freed for
    /// a new session (a client that died without a disconnect).
    pub channel_idle_reclaim: Duration,
    /// A channel that has carried no request for this long while a
    /// transfer of it (write data coming in, a reply going out) has not
    /// finished for as long is freed: its client is gone (or stopped).
    pub channel_stall_reclaim: Duration,
    /// Requests waiting for a storage thread (at least 1); more get
    /// `EBUSY`, so a flood cannot grow the daemon's memory without bound.
    pub max_queued: usize,
    /// When data is made durable.
    pub durability: Durability,
    /// How long a shutdown drains before giving up.
    pub shutdown_deadline: Duration,
    /// After bulk data, how long the idle loop may spin (instead of
    /// [`SPIN_TIME`](super::SPIN_TIME)) while no thread waits for a CPU; zero: never longer.
    pub bulk_spin: Duration,
    /// Where `rpc_server` records go.
    pub trace: Option<Arc<TraceFile>>,
    /// The job's session key; without one every connect is refused.
    pub session_key: Option<SessionKey>,
    /// Every request held this long in the queue before its dispatch: a
    /// fault point for testing diagnosis ([`super::fault`]); zero: none.
    pub queue_delay: Duration,
}

impl ServerConfig {
    /// Defaults for `node_id` / `node_name`: 32 requests at once, 4096
    /// channels, durability none, 10 s drain, no trace.
    pub fn new(node_id: u32, node_name: impl Into<String>) -> ServerConfig {
        ServerConfig {
            node_id,
            node_name: node_name.into(),
            max_concurrency: 32,
            max_channels: 4096,
            max_queued: DEFAULT_MAX_QUEUED,
            channel_idle_reclaim: DEFAULT_CHANNEL_IDLE_RECLAIM,
            channel_stall_reclaim: DEFAULT_CHANNEL_STALL_RECLAIM,
            durability: Durability::None,
            shutdown_deadline: Duration::from_secs(10),
            bulk_spin: DEFAULT_BULK_SPIN,
            trace: None,
            session_key: None,
            queue_delay: Duration::ZERO,
        }
    }

    /// Checks the bounds, naming the bad field.
    pub fn validate(&self) -> Result<()> {
        if self.max_concurrency == 0 || self.max_concurrency > MAX_CONCURRENCY {
            return Err(Error::invalid(
                "max_concurrency",
                format!(
                    "must be between 1 and {MAX_CONCURRENCY}, got {}",
                    self.max_concurrency
                ),
            ));
        }
        if self.max_channels == 0 {
            return Err(Error::invalid("max_channels", "must be at least 1"));
        }
        if self.max_queued == 0 {
            return Err(Error::invalid("max_queued", "must be at least 1"));
        }
        if self.bulk_spin > MAX_BULK_SPIN {
            return Err(Error::invalid(
                "bulk_spin_us",
                format!(
                    "must be between 0 and {} us, got {}",
                    MAX_BULK_SPIN.as_micros(),
                    self.bulk_spin.as_micros()
                ),
            ));
        }
        Ok(())
    }
}
