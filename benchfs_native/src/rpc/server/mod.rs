//! The RPC server: one daemon's event loop (docs/RPC.md).
//!
//! [`Server`] is the loop (`event_loop`): the one thread that owns the
//! UCX worker turns it and routes what happens between the parts, each of
//! which owns its state and is passed what else it needs:
//!
//! * `sessions`: the clients' channels, opened only for a connect
//!   signed with the session key and fresh (`replay`), in the channel
//!   table (`channels`);
//! * `requests`: an arriving request decoded and checked, then answered
//!   at once, queued or refused;
//! * `slots`: the queue, the slots that bound the requests dispatched
//!   at once, their data buffers (`buffers`, or the store's registered
//!   buffers: `data_buf`) and the writes whose data is arriving;
//! * `storage`: where a request's storage work runs, on the store's
//!   ring (turned by the loop) or on `max_concurrency` storage threads,
//!   and what each request does;
//! * `replies`: replies encoded, sent and recorded in the event log;
//! * `peers`: the channels whose client is gone or stalled;
//! * `outsiders`: datagrams from other users on the shared-memory
//!   wake-up sockets, counted into `stats` and the event log;
//! * `idle`: when the idle loop sleeps; `stats`: the loop's counters;
//!   `log`: its log lines; `signals`: SIGTERM/SIGINT/SIGHUP as a
//!   drain, `stop`: why and how it stops; `config`: its settings;
//!   `fault`: the queue delay a job may set to test diagnosis.
//!
//! The parts import each other one way only (the engine's module rules
//! test checks there is no cycle); only the loop knows them all.

pub mod buffers;
pub mod channels;
mod clock;
pub mod config;
mod data_buf;
pub mod event_loop;
pub mod fault;
mod idle;
mod log;
mod outsiders;
mod peers;
pub mod replay;
mod replies;
mod requests;
mod router;
mod sessions;
pub mod signals;
mod slots;
pub mod stats;
mod stop;
mod storage;

pub use config::{
    DEFAULT_CHANNEL_IDLE_RECLAIM, DEFAULT_CHANNEL_STALL_RECLAIM, DEFAULT_MAX_QUEUED, Durability,
    MAX_CONCURRENCY, ServerConfig,
};
pub use event_loop::Server;
pub use idle::{DEFAULT_BULK_SPIN, MAX_BULK_SPIN, SPIN_TIME};
pub use signals::SignalGuard;
pub use stats::{ServerReport, ServerStats};
