//! BenchFS native engine.
//!
//! * [`storage`]: the chunk store. One io_uring ring per store, owned by a
//!   driver thread, registered buffers from a bounded pool, a bounded fd
//!   cache and a flat on-disk layout (one sparse backing file per logical
//!   file).
//! * [`trace`]: the binary event log (docs/TRACE_FORMAT.md), shared with the
//!   later transport/rpc layers.
//! * [`bench`]: the bulk storage benchmark; it drives the same
//!   [`storage::driver::Driver`] inline on the calling thread.
//! * [`daemon`]: one daemon (store, UCX worker, registry record, RPC
//!   server) from start to clean shutdown.
//! * `python` (feature `python`): the only module that knows Python.
//!
//! Later modules (transport, rpc, placement, membership) sit beside these and
//! reuse [`error::Error`] and [`trace`].

pub mod bench;
pub mod build_info;
pub mod daemon;
pub mod error;
pub mod latency;
pub mod log;
pub mod membership;
pub mod placement;
pub mod rpc;
pub mod storage;
pub mod sys;
pub mod trace;

#[cfg(feature = "python")]
mod python;

pub use build_info::BuildInfo;
pub use error::{Error, Result};
pub use storage::{ChunkStore, StoreOptions, StoreStats};
pub use trace::TraceConfig;
