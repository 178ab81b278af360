//! `IORING_OP_POLL_ADD` (multishot) on the driver's eventfd: the ring's own
//! wake-up for new requests, so one wait covers requests and completions.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

/// Multishot poll for readability of an eventfd.
#[derive(Debug, Clone, Copy)]
pub struct PollEventfd {
    /// The eventfd (kept open by the driver's owner).
    pub fd: RawFd,
}

impl PollEventfd {
    pub(crate) fn entry(&self) -> squeue::Entry {
        opcode::PollAdd::new(types::Fd(self.fd), libc::POLLIN as u32)
            .multi(true)
            .build()
    }
}
