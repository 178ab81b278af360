//! The engine's event log: docs/TRACE_FORMAT.md, version 1.
//!
//! [`format`](mod@format) is the byte layout (header JSON, 48-byte
//! records) and a parser for tests and tools; [`writer`] is the recorder:
//! one file per process and trace directory, records buffered per thread in
//! memory ([`TraceBuffer`]) and appended to the file in large whole-record
//! blocks, so recording costs no syscall and no lock per event. The store,
//! the storage benchmark, the RPC client and the RPC server all record
//! through it.

pub mod format;
pub mod writer;

pub use format::{Kind, OpCode, Record};
pub use writer::{TraceBuffer, TraceConfig, TraceFile};
