//! Remote procedure calls between clients and daemons.
//!
//! * [`wire`]: the versioned message encoding (docs/WIRE_PROTOCOL.md). It
//!   is plain logic over byte slices and knows nothing of the transport or
//!   the storage layer; the client and server built on it carry a message
//!   in a UCX active message's header and the bulk data in its payload.
//! * [`session`]: connect / accept / disconnect, which give each client a
//!   channel on each daemon and the daemon an endpoint back to the client;
//!   and the active message ids of the RPC layer.
//! * [`transport`]: the `auto`/`shm`/`tcp` setting as UCX configuration.
//! * [`client`]: the RPC client (operations and the bulk phase).
//! * [`server`]: a daemon's event loop, storage pool and sessions
//!   (docs/RPC.md).

pub mod client;
pub mod server;
pub mod session;
pub mod transport;
pub mod wire;
