//! The bytes a peer needs to connect to a worker.

use std::fmt;

/// Opaque worker address, the bytes a peer needs to connect
/// (`ucp_worker_get_address`). Publish it in a registry as is.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct WorkerAddress(Vec<u8>);

impl WorkerAddress {
    /// Wrap bytes received from a registry.
    pub fn from_bytes(bytes: impl Into<Vec<u8>>) -> Self {
        WorkerAddress(bytes.into())
    }

    /// The bytes to publish.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for WorkerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WorkerAddress({} bytes)", self.0.len())
    }
}
