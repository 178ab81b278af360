//! The kernel operations, one file each.
//!
//! An operation owns everything its SQE points to (registered buffer,
//! statx buffer, path) and the descriptor it uses. All of that memory is on
//! the heap or in the buffer pool, so an operation may be moved (into the
//! driver's slot table, back to the caller) without invalidating its SQE.
//!
//! The contract for building an SQE with `Op::entry`: the driver keeps
//! the `Op` (and thereby every resource it owns) alive until the kernel has
//! posted the operation's completion, and only then hands it back.

pub mod fsync;
pub mod ftruncate;
pub mod poll;
pub mod read;
pub mod statx;
pub mod unlink;
pub mod write;

pub use fsync::Fsync;
pub use ftruncate::Ftruncate;
pub use poll::PollEventfd;
pub use read::Read;
pub use statx::Statx;
pub use unlink::Unlink;
pub use write::Write;

use io_uring::squeue;

use crate::trace::OpCode;

/// One kernel operation with its resources.
#[derive(Debug)]
pub enum Op {
    /// `IORING_OP_READ_FIXED`.
    Read(Read),
    /// `IORING_OP_WRITE_FIXED`.
    Write(Write),
    /// `IORING_OP_FSYNC`.
    Fsync(Fsync),
    /// `IORING_OP_STATX`.
    Statx(Statx),
    /// `IORING_OP_UNLINKAT`.
    Unlink(Unlink),
    /// `IORING_OP_FTRUNCATE`.
    Ftruncate(Ftruncate),
}

impl Op {
    /// The SQE for this operation (without user data). See the module
    /// docs for the lifetime contract.
    #[inline]
    pub(crate) fn entry(&mut self) -> squeue::Entry {
        match self {
            Op::Read(o) => o.entry(),
            Op::Write(o) => o.entry(),
            Op::Fsync(o) => o.entry(),
            Op::Statx(o) => o.entry(),
            Op::Unlink(o) => o.entry(),
            Op::Ftruncate(o) => o.entry(),
        }
    }

    /// The trace op code.
    #[inline]
    pub fn code(&self) -> OpCode {
        match self {
            Op::Read(_) => OpCode::Read,
            Op::Write(_) => OpCode::Write,
            Op::Fsync(_) => OpCode::Fsync,
            Op::Statx(_) => OpCode::Stat,
            Op::Unlink(_) => OpCode::Remove,
            Op::Ftruncate(_) => OpCode::Truncate,
        }
    }

    /// Offset in the backing file (0 for metadata operations).
    #[inline]
    pub fn offset(&self) -> u64 {
        match self {
            Op::Read(o) => o.offset,
            Op::Write(o) => o.offset,
            Op::Ftruncate(o) => o.len,
            _ => 0,
        }
    }

    /// For data operations: whether the descriptor is O_DIRECT.
    #[inline]
    pub fn direct(&self) -> Option<bool> {
        match self {
            Op::Read(o) => Some(o.direct),
            Op::Write(o) => Some(o.direct),
            _ => None,
        }
    }
}
