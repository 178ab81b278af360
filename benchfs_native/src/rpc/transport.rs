//! Which UCX transports clients and daemons use: one setting, mapped to
//! UCX configuration in one place so both sides always agree.

use std::fmt;
use std::str::FromStr;

use benchfs_ucx::{Context, Worker};

use crate::error::{Error, Result};

/// The run config's `cluster.transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// UCX's own choice (shared memory between processes of one host,
    /// network otherwise), or whatever `UCX_TLS` in the environment says.
    #[default]
    Auto,
    /// Shared memory only (all processes on one host).
    Shm,
    /// TCP only, as between hosts without RDMA (and to exercise the
    /// network path on one host).
    Tcp,
}

impl Transport {
    /// The `UCX_TLS` value it sets, if any.
    pub fn ucx_tls(self) -> Option<&'static str> {
        match self {
            Transport::Auto => None,
            // `self` lets a process talk to itself (a client beside its daemon).
            Transport::Shm => Some("sm,self"),
            Transport::Tcp => Some("tcp,self"),
        }
    }

    /// The name used in configs.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Auto => "auto",
            Transport::Shm => "shm",
            Transport::Tcp => "tcp",
        }
    }

    /// A UCX context (active messages, wake-up) and one worker for the
    /// calling thread, configured for this transport. `name` appears in
    /// UCX's logs.
    pub fn open(self, name: &str) -> Result<(Context, Worker)> {
        // A peer killed during a shared-memory copy fails that peer's
        // operations instead of aborting this process.
        benchfs_ucx::survive_dead_peers();
        let mut builder = Context::builder().name(name);
        if let Some(tls) = self.ucx_tls() {
            builder = builder.config("TLS", tls);
        }
        let context = builder.build().map_err(|e| ucx_error(&e, "UCX context"))?;
        let worker = context
            .create_worker()
            .map_err(|e| ucx_error(&e, "UCX worker"))?;
        Ok((context, worker))
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Transport {
    type Err = Error;

    fn from_str(s: &str) -> Result<Transport> {
        match s {
            "auto" => Ok(Transport::Auto),
            "shm" => Ok(Transport::Shm),
            "tcp" => Ok(Transport::Tcp),
            other => Err(Error::invalid(
                "transport",
                format!("must be auto, shm or tcp, got {other:?}"),
            )),
        }
    }
}

/// A UCX failure as an engine error: its errno, and what failed in words.
pub fn ucx_error(e: &benchfs_ucx::Error, what: &str) -> Error {
    Error::Os {
        errno: e.errno(),
        op: "ucx",
        path: format!("{what}: {e}"),
    }
}
