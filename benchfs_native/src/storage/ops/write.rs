//! `IORING_OP_WRITE_FIXED`: write from a registered buffer.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use io_uring::{opcode, squeue, types};

use crate::storage::buffer::FixedBuf;

/// Write `len` bytes of `buf`, starting at `buf_offset`, to `offset` of `fd`.
/// (`buf_offset` is non-zero when the rest of a short write is resubmitted.)
#[derive(Debug)]
pub struct Write {
    /// The backing file.
    pub fd: Arc<OwnedFd>,
    /// File offset.
    pub offset: u64,
    /// Source.
    pub buf: FixedBuf,
    /// Start of the bytes to write within `buf`.
    pub buf_offset: usize,
    /// Bytes to write.
    pub len: usize,
    /// Whether `fd` is O_DIRECT.
    pub direct: bool,
}

impl Write {
    pub(crate) fn entry(&mut self) -> squeue::Entry {
        let room = self.buf.capacity().saturating_sub(self.buf_offset);
        let len = u32::try_from(self.len.min(room)).unwrap_or(u32::MAX);
        opcode::WriteFixed::new(
            types::Fd(self.fd.as_raw_fd()),
            self.buf.io_ptr(self.buf_offset),
            len,
            self.buf.index(),
        )
        .offset(self.offset)
        .build()
    }
}
