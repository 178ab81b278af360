//! BenchFS native engine: a chunk store on io_uring, daemons serving it
//! over UCX active messages, their client, and the Python boundary.
//!
//! Layers, lowest first; a module uses only those below it (checked by
//! `tests/layers/` in `make lint`):
//!
//! * [`sys`]: every libc call (file system probes, eventfd, epoll, the
//!   buffer mapping, signal handlers, the host name). [`error`]: the one
//!   error type. [`latency`]: the latency summary. [`log`]: whole log
//!   lines on stderr. [`build_info`]: the build's provenance.
//!   [`deadline`]: deadlines that cannot overflow. `code_enum`: the
//!   macro declaring the numbered enums of the wire format and the trace.
//! * [`trace`]: the binary event log (docs/TRACE_FORMAT.md) every layer
//!   records into.
//! * [`storage`]: the chunk store: one io_uring ring per store owned by a
//!   driver thread, registered buffers from a bounded pool, a bounded fd
//!   cache, one sparse backing file per logical file. It knows nothing of
//!   the transport or of rpc.
//! * [`placement`], [`membership`]: plain logic: which node holds what,
//!   and the registry of daemons.
//! * [`rpc`]: the wire format, sessions, the transport setting
//!   (`rpc::transport`, which with the `benchfs_ucx` crate knows nothing of
//!   storage or of the rest of rpc), the client and the server's event
//!   loop.
//! * [`bench`](mod@bench): the bulk storage benchmark; it drives the same
//!   [`storage::driver::Driver`] inline on the calling thread.
//! * [`mount`]: the FUSE mount of a cluster, the only module that knows
//!   FUSE; its worker threads each own a client.
//! * [`daemon`]: one daemon (store, UCX worker, registry record, RPC
//!   server) from start to clean shutdown.
//! * `python` (feature `python`): the PyO3 boundary, the only module that
//!   knows Python; it builds the compiled module `benchfs_native._native`.

pub mod bench;
pub mod build_info;
mod code_enum;
pub mod daemon;
pub mod deadline;
pub mod error;
pub mod latency;
pub mod log;
pub mod membership;
pub mod mount;
pub mod namespace;
pub mod placement;
pub mod posix;
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
