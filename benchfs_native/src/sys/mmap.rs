//! Anonymous memory mappings.

use std::io;
use std::ptr::NonNull;

/// A private, read-write, anonymous mapping of `len` bytes (page-aligned,
/// zero-filled), unmapped when dropped.
///
/// It hands out a raw pointer only: who may touch which bytes, and that
/// nothing still uses them when the mapping is dropped, is its owner's
/// contract.
#[derive(Debug)]
pub struct AnonMapping {
    base: NonNull<u8>,
    len: usize,
}

// Safety: the mapping is plain memory that no thread owns; this type never
// reads or writes it, it only hands out the base pointer.
unsafe impl Send for AnonMapping {}
// Safety: as above; `&AnonMapping` only exposes the pointer and length.
unsafe impl Sync for AnonMapping {}

impl AnonMapping {
    /// Maps `len` bytes.
    pub fn new(len: usize) -> io::Result<AnonMapping> {
        // Safety: an anonymous private mapping has no preconditions; the
        // result is checked for MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(p.cast::<u8>())
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))?;
        Ok(AnonMapping { base, len })
    }

    /// The first byte.
    pub fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping has no bytes (never: `mmap` refuses length 0).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for AnonMapping {
    fn drop(&mut self) {
        // Safety: `base`/`len` are exactly the mapping made in `new`,
        // unmapped once; that nothing uses it any more is the owner's
        // contract (see the type's docs).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}
