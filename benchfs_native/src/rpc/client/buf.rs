//! Buffers an operation shares with the UCX requests that send or fill its
//! pieces.
//!
//! A [`SharedBuf`] is one allocation (a heap block, or a share of a
//! mapping on huge pages, see [`SharedBuf::transfer_set`]); a [`Piece`] is
//! a region of it handed to UCX by ownership (it keeps the allocation
//! alive). An RPC that times out leaves its request to UCX, and the piece
//! with it, so a late rendezvous receive can never write into freed memory.
//! The bytes are readable only while no piece exists ([`SharedBuf::bytes`]),
//! so Rust never holds a reference to memory UCX may be writing.

use std::fmt;
use std::rc::Rc;

use benchfs_ucx::{IoBuf, IoBufMut};

use crate::sys::AnonMapping;

/// The smallest set of transfer buffers cut from huge pages: below it,
/// rounding up to a whole huge page would cost more memory than the set.
const HUGE_SET_MIN: usize = 1 << 20;
/// The smallest page: one write in each faults a whole buffer in.
const BASE_PAGE: usize = 4096;

struct Alloc {
    ptr: *mut u8,
    len: usize,
    /// The mapping a set of buffers shares, unmapped with the last of them;
    /// `None`: a boxed slice of exactly `len` bytes.
    mapping: Option<Rc<AnonMapping>>,
}

impl Drop for Alloc {
    fn drop(&mut self) {
        if self.mapping.is_none() {
            // Safety: `ptr`/`len` come from `Box::into_raw` of a boxed slice
            // of exactly `len` bytes (see `SharedBuf::from_vec`), freed once
            // here.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.len)) });
        }
    }
}

/// One allocation, split into [`Piece`]s for UCX.
pub struct SharedBuf {
    alloc: Rc<Alloc>,
}

impl fmt::Debug for SharedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedBuf")
            .field("len", &self.alloc.len)
            .field("pieces", &(Rc::strong_count(&self.alloc) - 1))
            .finish()
    }
}

impl SharedBuf {
    /// `len` zero bytes (holes of a short read stay zero).
    pub fn zeroed(len: usize) -> SharedBuf {
        SharedBuf::from_vec(vec![0u8; len])
    }

    /// Takes over `v`'s bytes.
    pub fn from_vec(v: Vec<u8>) -> SharedBuf {
        let boxed = v.into_boxed_slice();
        let len = boxed.len();
        let ptr = Box::into_raw(boxed).cast::<u8>();
        SharedBuf {
            alloc: Rc::new(Alloc {
                ptr,
                len,
                mapping: None,
            }),
        }
    }

    /// `count` zeroed buffers of `len` bytes for a stream of transfers
    /// (`pop` takes the lowest address first). A set of 1 MiB or more is
    /// cut from one mapping on transparent huge pages (rounded up to whole
    /// huge pages): a rendezvous receiver pins the sender's pages for every
    /// copy, and pins a huge page as one where it pins 512 base pages.
    /// Where no such mapping can be made the buffers come from the heap.
    /// Every page is faulted in here, before a caller starts its clock:
    /// IOR and fio fill their buffers before they time, and a first
    /// touch that zeroes the page (on a virtual machine, faults it in
    /// from the host too) is not the file system's time.
    pub fn transfer_set(count: usize, len: usize) -> Vec<SharedBuf> {
        let mut set = SharedBuf::untouched_set(count, len);
        for buf in &mut set {
            if let Some(bytes) = buf.bytes_mut() {
                for at in (0..bytes.len()).step_by(BASE_PAGE) {
                    bytes[at] = 0;
                }
            }
        }
        set
    }

    fn untouched_set(count: usize, len: usize) -> Vec<SharedBuf> {
        let total = count.saturating_mul(len);
        let mapping = (total >= HUGE_SET_MIN)
            .then(|| AnonMapping::huge(total).ok())
            .flatten();
        let Some(mapping) = mapping.map(Rc::new) else {
            return (0..count).map(|_| SharedBuf::zeroed(len)).collect();
        };
        (0..count)
            .rev()
            .map(|i| SharedBuf {
                alloc: Rc::new(Alloc {
                    // In bounds: `(i + 1) * len <= total <= mapping.len()`.
                    ptr: mapping.base().as_ptr().wrapping_add(i * len),
                    len,
                    mapping: Some(Rc::clone(&mapping)),
                }),
            })
            .collect()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.alloc.len
    }

    /// Whether it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.alloc.len == 0
    }

    /// Whether no piece of it exists any more (every request that used one
    /// has finished and been dropped).
    pub fn is_exclusive(&self) -> bool {
        Rc::strong_count(&self.alloc) == 1
    }

    /// Region `offset..offset + len`, clamped to the buffer.
    pub fn piece(&mut self, offset: usize, len: usize) -> Piece {
        let offset = offset.min(self.alloc.len);
        let len = len.min(self.alloc.len - offset);
        Piece {
            alloc: Rc::clone(&self.alloc),
            offset,
            len,
        }
    }

    /// The bytes, when no piece exists.
    pub fn bytes(&self) -> Option<&[u8]> {
        if !self.is_exclusive() {
            return None;
        }
        // Safety: no piece exists (checked), so UCX holds no pointer into
        // the allocation, and `piece` needs `&mut self`, so none can be made
        // while this borrow lives.
        Some(unsafe { std::slice::from_raw_parts(self.alloc.ptr, self.alloc.len) })
    }

    /// The bytes for writing, when no piece exists.
    pub fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        if !self.is_exclusive() {
            return None;
        }
        // Safety: as in `bytes`, and `&mut self` makes this borrow unique.
        Some(unsafe { std::slice::from_raw_parts_mut(self.alloc.ptr, self.alloc.len) })
    }

    /// The bytes as a vector (a copy), when no piece exists.
    pub fn to_vec(&self) -> Option<Vec<u8>> {
        self.bytes().map(<[u8]>::to_vec)
    }
}

/// A region of a [`SharedBuf`], sent from or received into by UCX.
#[derive(Clone)]
pub struct Piece {
    alloc: Rc<Alloc>,
    offset: usize,
    len: usize,
}

impl fmt::Debug for Piece {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Piece({}..{})", self.offset, self.offset + self.len)
    }
}

impl Piece {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn start(&self) -> *mut u8 {
        // `offset <= alloc.len` (clamped in `SharedBuf::piece`), so this
        // stays inside (or one past) the allocation.
        self.alloc.ptr.wrapping_add(self.offset)
    }
}

// Safety: the region lies inside an allocation (heap block or mapping)
// that the piece keeps alive (`Rc`) and that never moves; `len` bytes
// from `start` are in bounds.
unsafe impl IoBuf for Piece {
    fn stable_ptr(&self) -> *const u8 {
        self.start()
    }
    fn bytes_init(&self) -> usize {
        self.len
    }
}

// Safety: as for `IoBuf`; the allocation is fully initialised (zeroed or
// copied in), so `set_init` has nothing to record.
unsafe impl IoBufMut for Piece {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.start()
    }
    fn bytes_total(&mut self) -> usize {
        self.len
    }
    unsafe fn set_init(&mut self, _len: usize) {}
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn bytes_only_without_pieces() {
        let mut b = SharedBuf::from_vec(vec![1, 2, 3, 4]);
        let p = b.piece(1, 10);
        assert_eq!(p.len(), 3);
        assert!(b.bytes().is_none());
        assert!(b.bytes_mut().is_none());
        drop(p);
        assert_eq!(b.bytes().unwrap(), &[1, 2, 3, 4]);
        let p = b.piece(9, 1);
        assert!(p.is_empty());
        drop(p);
        b.bytes_mut().unwrap()[0] = 7;
        assert_eq!(b.to_vec().unwrap(), vec![7, 2, 3, 4]);
    }

    #[test]
    fn a_transfer_set_is_disjoint_buffers_that_outlive_each_other() {
        for (count, len) in [(4, 1 << 20), (1, 1 << 20), (3, 4096), (2, 3 << 20)] {
            let mut set = SharedBuf::transfer_set(count, len);
            assert_eq!(set.len(), count);
            for (i, b) in set.iter_mut().enumerate() {
                assert_eq!(b.len(), len);
                let bytes = b.bytes_mut().unwrap();
                assert!(bytes.iter().all(|&x| x == 0));
                bytes.fill(i as u8 + 1);
            }
            let mut last = set.pop().unwrap();
            let p = last.piece(0, len);
            drop(set);
            drop(last);
            // The piece still holds the mapping; its bytes are its buffer's.
            assert_eq!(p.len(), len);
            // Safety: the piece's `len` bytes are live and no one writes them.
            let seen = unsafe { std::slice::from_raw_parts(p.stable_ptr(), p.bytes_init()) };
            assert!(
                seen.iter().all(|&x| usize::from(x) == count),
                "{count} x {len}"
            );
        }
    }

    #[test]
    fn a_piece_outlives_its_buffer_handle() {
        let mut b = SharedBuf::zeroed(8);
        let mut p = b.piece(4, 4);
        drop(b);
        // Writing through the piece is still in bounds of a live allocation.
        // Safety: 4 bytes at the piece's start belong to it.
        unsafe { std::ptr::write_bytes(p.stable_mut_ptr(), 9, p.bytes_total()) };
        assert_eq!(p.bytes_init(), 4);
    }
}
