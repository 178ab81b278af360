//! Anonymous memory mappings.

use std::io;
use std::ptr::NonNull;

/// Size of a transparent huge page on x86-64 and most aarch64 kernels
/// (`/sys/kernel/mm/transparent_hugepage/hpage_pmd_size`).
pub const HUGE_PAGE: usize = 2 << 20;

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
        let base = map_anonymous(len)?;
        Ok(AnonMapping { base, len })
    }

    /// Maps at least `len` bytes on transparent huge pages where the kernel
    /// gives them: the length rounded up to whole huge pages
    /// ([`HUGE_PAGE`]), the base aligned to one, and `MADV_HUGEPAGE` advised
    /// (this machine kind's kernels give huge pages to advised mappings
    /// only). Another process pins a huge page as one where it pins 512 base
    /// pages (a rendezvous copy, `process_vm_readv`), and the TLB holds it
    /// in one entry. Without huge pages (THP off, or none free) the mapping
    /// is plain pages and works the same.
    pub fn huge(len: usize) -> io::Result<AnonMapping> {
        let einval = || io::Error::from_raw_os_error(libc::EINVAL);
        let len = len
            .checked_next_multiple_of(HUGE_PAGE)
            .filter(|&l| l > 0)
            .ok_or_else(einval)?;
        // Map one huge page more than needed and give back the unaligned
        // head and the rest of the tail: mmap aligns to base pages only.
        let wide_len = len.checked_add(HUGE_PAGE).ok_or_else(einval)?;
        let wide = map_anonymous(wide_len)?;
        let start = wide.as_ptr() as usize;
        let head = start.next_multiple_of(HUGE_PAGE) - start;
        let tail = wide_len - head - len;
        // Safety: `head < HUGE_PAGE`, so `base` and `base + len` lie inside
        // the mapping just made, which no one else knows of; the two ranges
        // given back are its parts outside `base..base + len`.
        let base = unsafe {
            let base = wide.add(head);
            if head > 0 {
                libc::munmap(wide.as_ptr().cast(), head);
            }
            if tail > 0 {
                libc::munmap(base.as_ptr().add(len).cast(), tail);
            }
            base
        };
        let mapping = AnonMapping { base, len };
        // Advice only: EINVAL where the kernel has no THP; the mapping
        // stays plain pages then.
        // Safety: `base..base + len` is this mapping.
        unsafe {
            libc::madvise(base.as_ptr().cast(), len, libc::MADV_HUGEPAGE);
        }
        Ok(mapping)
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

/// A private, read-write, anonymous mapping of `len` bytes, owned by the
/// caller.
fn map_anonymous(len: usize) -> io::Result<NonNull<u8>> {
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
    NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_mappings_are_aligned_whole_huge_pages_and_writable() {
        for asked in [1, 4096, 1 << 20, HUGE_PAGE, HUGE_PAGE + 1, 5 << 20] {
            let m = AnonMapping::huge(asked).unwrap();
            assert_eq!(m.base().as_ptr() as usize % HUGE_PAGE, 0, "asked {asked}");
            assert_eq!(m.len(), asked.next_multiple_of(HUGE_PAGE), "asked {asked}");
            // Safety: the whole mapping is this test's.
            let bytes = unsafe { std::slice::from_raw_parts_mut(m.base().as_ptr(), m.len()) };
            assert!(bytes.iter().all(|&b| b == 0));
            bytes[0] = 1;
            bytes[m.len() - 1] = 2;
            assert_eq!((bytes[0], bytes[m.len() - 1]), (1, 2));
        }
    }

    #[test]
    fn a_huge_mapping_of_nothing_is_refused() {
        assert_eq!(
            AnonMapping::huge(0).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
    }
}
