//! `IORING_OP_READ_FIXED`: read into a registered buffer.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use io_uring::{opcode, squeue, types};

use crate::storage::buffer::FixedBuf;

/// Read `len` bytes at `offset` of `fd` into `buf` (from its start).
#[derive(Debug)]
pub struct Read {
    /// The backing file.
    pub fd: Arc<OwnedFd>,
    /// File offset.
    pub offset: u64,
    /// Destination; on completion its `len` is set to the bytes read.
    pub buf: FixedBuf,
    /// Bytes to read (at most the buffer's capacity).
    pub len: usize,
    /// Whether `fd` is O_DIRECT.
    pub direct: bool,
}

impl Read {
    pub(crate) fn entry(&mut self) -> squeue::Entry {
        let len = u32::try_from(self.len.min(self.buf.capacity())).unwrap_or(u32::MAX);
        opcode::ReadFixed::new(
            types::Fd(self.fd.as_raw_fd()),
            self.buf.io_ptr_mut(0),
            len,
            self.buf.index(),
        )
        .offset(self.offset)
        .build()
    }
}
