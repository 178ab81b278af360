//! `IORING_OP_UNLINKAT`: remove a backing file.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use io_uring::{opcode, squeue, types};

/// unlink `name` relative to `dirfd`.
#[derive(Debug)]
pub struct Unlink {
    /// The store's root directory.
    pub dirfd: Arc<OwnedFd>,
    /// Backing-file name.
    pub name: CString,
}

impl Unlink {
    pub(crate) fn entry(&mut self) -> squeue::Entry {
        opcode::UnlinkAt::new(types::Fd(self.dirfd.as_raw_fd()), self.name.as_ptr()).build()
    }
}
