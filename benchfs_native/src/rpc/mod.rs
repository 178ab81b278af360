//! Remote procedure calls between clients and daemons.
//!
//! * [`wire`]: the versioned message encoding (docs/WIRE_PROTOCOL.md). It
//!   is plain logic over byte slices (paths checked with the storage
//!   layout's rules) and knows nothing of the transport; the client and
//!   server built on it carry a message in a UCX active message's header
//!   and the bulk data in its payload.
//! * [`session`]: connect / accept / disconnect, which give each client a
//!   channel on each daemon and the daemon an endpoint back to the client;
//!   and the active message ids of the RPC layer.
//! * [`session_key`]: the job's secret (environment or the registry's
//!   `session.key`) that signs every connect.
//! * [`members`]: the members file, the whole membership in one file
//!   signed with the session key, which clients read instead of N records.
//! * [`transport`]: the `auto`/`shm`/`tcp` setting as UCX configuration.
//! * [`client`]: the RPC client (operations and the bulk phase).
//! * [`server`]: a daemon's event loop, storage pool and sessions
//!   (docs/RPC.md).

pub mod client;
pub mod members;
pub mod server;
pub mod session;
pub mod session_key;
pub mod transport;
pub mod wire;

use crate::trace::OpCode;
use wire::Op;

/// The trace op code of a wire op (client and server records alike).
pub fn trace_op(op: Op) -> OpCode {
    match op {
        Op::Ping => OpCode::Ping,
        Op::Create => OpCode::Create,
        Op::Open => OpCode::Lookup,
        Op::Stat => OpCode::Stat,
        Op::Write => OpCode::Write,
        Op::Read => OpCode::Read,
        Op::Fsync => OpCode::Fsync,
        Op::Truncate => OpCode::Truncate,
        Op::Unlink => OpCode::Unlink,
        Op::Readdir => OpCode::Readdir,
        Op::Stats => OpCode::Stats,
        Op::Shutdown => OpCode::Shutdown,
        Op::Mkdir => OpCode::Mkdir,
        Op::Rmdir => OpCode::Rmdir,
        Op::CheckParent => OpCode::CheckParent,
        Op::Link => OpCode::Link,
        Op::Setattr => OpCode::Setattr,
        Op::Statfs => OpCode::Statfs,
        Op::Symlink => OpCode::Symlink,
        Op::Readlink => OpCode::Readlink,
        Op::LinkCount => OpCode::LinkCount,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_has_a_trace_code() {
        let codes: std::collections::HashSet<u8> =
            Op::ALL.iter().map(|&o| trace_op(o) as u8).collect();
        assert_eq!(codes.len(), Op::ALL.len());
    }
}
