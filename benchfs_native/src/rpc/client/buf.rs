//! Buffers an operation shares with the UCX requests that send or fill its
//! pieces.
//!
//! A [`SharedBuf`] is one heap allocation; a [`Piece`] is a region of it
//! handed to UCX by ownership (it keeps the allocation alive). An RPC that
//! times out leaves its request to UCX, and the piece with it, so a late
//! rendezvous receive can never write into freed memory. The bytes are
//! readable only while no piece exists ([`SharedBuf::bytes`]), so Rust never
//! holds a reference to memory UCX may be writing.

use std::fmt;
use std::rc::Rc;

use benchfs_ucx::{IoBuf, IoBufMut};

struct Alloc {
    ptr: *mut u8,
    len: usize,
}

impl Drop for Alloc {
    fn drop(&mut self) {
        // Safety: `ptr`/`len` come from `Box::into_raw` of a boxed slice of
        // exactly `len` bytes (see `SharedBuf::from_vec`), freed once here.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.len)) });
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
            alloc: Rc::new(Alloc { ptr, len }),
        }
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

// Safety: the region lies inside a heap allocation that the piece keeps
// alive (`Rc`) and that never moves; `len` bytes from `start` are in bounds.
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
