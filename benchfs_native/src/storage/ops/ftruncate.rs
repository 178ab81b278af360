//! `IORING_OP_FTRUNCATE` (Linux 6.9+): set a file's size.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use io_uring::{opcode, squeue, types};

/// Set the size of `fd` to `len`.
#[derive(Debug)]
pub struct Ftruncate {
    /// The backing file (writable).
    pub fd: Arc<OwnedFd>,
    /// New size.
    pub len: u64,
}

impl Ftruncate {
    /// The opcode, for probing kernel support.
    pub const CODE: u8 = opcode::Ftruncate::CODE;

    pub(crate) fn entry(&mut self) -> squeue::Entry {
        opcode::Ftruncate::new(types::Fd(self.fd.as_raw_fd()), self.len).build()
    }
}
