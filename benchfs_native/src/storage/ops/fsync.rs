//! `IORING_OP_FSYNC`: make a file's data and metadata durable.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use io_uring::{opcode, squeue, types};

/// fsync `fd`.
#[derive(Debug)]
pub struct Fsync {
    /// The backing file.
    pub fd: Arc<OwnedFd>,
}

impl Fsync {
    pub(crate) fn entry(&mut self) -> squeue::Entry {
        opcode::Fsync::new(types::Fd(self.fd.as_raw_fd())).build()
    }
}
