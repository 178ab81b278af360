//! `IORING_OP_STATX`: a backing file's size.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use io_uring::{opcode, squeue, types};

/// statx `name` relative to `dirfd`.
#[derive(Debug)]
pub struct Statx {
    /// The store's root directory.
    pub dirfd: Arc<OwnedFd>,
    /// Backing-file name.
    pub name: CString,
    /// Filled in by the kernel (boxed: its address must not move).
    pub out: Box<StatxBuf>,
}

/// `struct statx`, zero-initialised.
pub struct StatxBuf(pub libc::statx);

impl std::fmt::Debug for StatxBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatxBuf")
            .field("size", &self.0.stx_size)
            .finish()
    }
}

impl StatxBuf {
    /// A zeroed buffer.
    pub fn new() -> Box<StatxBuf> {
        // Safety: `libc::statx` is plain data; all-zero is a valid value.
        Box::new(StatxBuf(unsafe { std::mem::zeroed() }))
    }
}

impl Statx {
    /// Stat `name` in `dirfd`.
    pub fn new(dirfd: Arc<OwnedFd>, name: CString) -> Statx {
        Statx {
            dirfd,
            name,
            out: StatxBuf::new(),
        }
    }

    /// Whether the name is a symbolic link (never followed: a link in the
    /// data directory is refused, not statted through).
    pub fn is_link(&self) -> bool {
        u32::from(self.out.0.stx_mode) & libc::S_IFMT == libc::S_IFLNK
    }

    /// File size after completion.
    pub fn size(&self) -> u64 {
        self.out.0.stx_size
    }

    pub(crate) fn entry(&mut self) -> squeue::Entry {
        let out: *mut libc::statx = &raw mut self.out.0;
        opcode::Statx::new(
            types::Fd(self.dirfd.as_raw_fd()),
            self.name.as_ptr(),
            out.cast::<types::statx>(),
        )
        .flags(libc::AT_SYMLINK_NOFOLLOW)
        .mask(libc::STATX_SIZE | libc::STATX_TYPE)
        .build()
    }
}
