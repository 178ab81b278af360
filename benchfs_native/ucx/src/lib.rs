//! UCX transport of the BenchFS engine: a thin binding of the system
//! libucx (generated at build time from `ucx.pc`) and a small safe wrapper
//! for UCP active messages.
//!
//! - [`Context`]: transports and features (active messages, wake-up).
//! - [`Worker`]: one per thread; `progress`, `address`, `event_fd`/`arm`,
//!   AM handlers, and deadline-bounded waits.
//! - [`Endpoint`]: a connection to a peer worker; [`Endpoint::am_send`].
//! - [`AmMessage`]: a received message, eager data in place or a
//!   rendezvous descriptor received straight into a caller's buffer.
//! - [`Request`]: an operation in flight that owns its buffer.
//! - [`Error`]: the one error type (status, its name, the operation).
//!
//! Everything except [`Context`] belongs to the thread that created the
//! worker. See `docs/TRANSPORT.md` for the design and measured figures.
//!
//! Modules, each using only those above it (no cycle):
//!
//! - `sys` (the bindgen output), `buf` (what a request may own),
//!   `address` (a worker's address bytes), `print` (UCX's `FILE *`
//!   printers to a string); `error` (on `sys`).
//! - `context`: the UCP context.
//! - `signals`: the shared-memory transports' wake-up sockets, and
//!   datagrams on them from other users (on `sys` only through libc).
//! - `shared`: the state of one worker shared by everything created from
//!   it (handle, registered handlers, the progress / sleep loop).
//! - `request`: operations in flight.
//! - `am`: active-message handlers, received messages, sends.
//! - `endpoint`: connections to peers.
//! - `worker`: [`Worker`], the owner's face of the shared state, and
//!   [`Context::create_worker`].
//!
//! ```
//! use std::{cell::RefCell, rc::Rc, time::{Duration, Instant}};
//! use benchfs_ucx::{Context, EndpointOptions, SendOptions};
//!
//! let ctx = Context::new()?;
//! let (server, client) = (ctx.create_worker()?, ctx.create_worker()?);
//! let inbox = Rc::new(RefCell::new(Vec::new()));
//! let sink = inbox.clone();
//! server.set_am_handler(7, move |msg| sink.borrow_mut().push(msg))?;
//!
//! // The address would normally travel through a registry.
//! let ep = client.connect(&server.address()?, EndpointOptions::default())?;
//! let deadline = Instant::now() + Duration::from_secs(10);
//! let sent = ep.am_send(7, b"hdr", vec![1u8; 1 << 20], SendOptions::default())?;
//! while inbox.borrow().is_empty() {
//!     client.progress();
//!     server.progress();
//!     assert!(Instant::now() < deadline);
//! }
//! let msg = inbox.borrow_mut().pop().unwrap();
//! assert_eq!(msg.header(), b"hdr");
//! // 1 MiB goes by rendezvous: receive straight into our own buffer.
//! let recv = msg.recv_into(Vec::with_capacity(1 << 20))?;
//! while !(recv.is_done() && sent.is_done()) {
//!     client.progress();
//!     server.progress();
//!     assert!(Instant::now() < deadline);
//! }
//! let data = recv.wait_filled(deadline)?;
//! assert_eq!(data, vec![1u8; 1 << 20]);
//! # Ok::<(), benchfs_ucx::Error>(())
//! ```

mod address;
mod am;
mod buf;
mod context;
mod dead_peer;
mod endpoint;
mod error;
mod header;
mod print;
mod request;
mod shared;
mod signals;
mod sys;
mod worker;

pub use address::WorkerAddress;
pub use am::{AmMessage, Proto, SendOptions};
pub use buf::{IoBuf, IoBufMut};
pub use context::{Context, ContextBuilder};
pub use dead_peer::{dead_peer_copies, survive_dead_peers};
pub use endpoint::{Closing, Endpoint, EndpointOptions, ErrorMode};
pub use error::{Error, Result, Status, status_name};
pub use request::Request;
pub use shared::DEFAULT_SPIN_ITERATIONS;
pub use signals::{Drained, ForeignSignals};
pub use worker::Worker;

/// The UCX version the bindings were generated against (from `ucx.pc`).
pub const UCX_BUILD_VERSION: &str = env!("BENCHFS_UCX_VERSION");
