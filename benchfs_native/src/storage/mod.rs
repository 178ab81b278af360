//! The storage engine: a chunk store on a local directory, all data I/O
//! through io_uring with registered buffers.
//!
//! * [`layout`]: path validation, backing-file names, per-chunk pieces.
//! * [`buffer`]: the bounded pool of registered buffers.
//! * [`fd_cache`]: bounded cache of open backing files per (file, mode).
//! * [`ops`]: one kernel operation per file.
//! * [`driver`]: the ring and its submit loop.
//! * [`store`]: [`ChunkStore`], the driver on its own thread.

pub mod buffer;
pub mod driver;
pub mod fd_cache;
pub mod layout;
pub mod ops;
pub mod stats;
pub mod store;

pub use driver::{Completion, Driver, RingSetup};
pub use stats::{Counters, StoreStats};
pub use store::{ChunkStore, StoreOptions};
