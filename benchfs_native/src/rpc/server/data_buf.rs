//! The buffer UCX receives a request's data into or sends a reply's data
//! from: one of the loop's pool vectors, or one of the store's registered
//! buffers, so that a write received into it is written from it and a read
//! read into it is sent from it, with no copy between (docs/RPC.md,
//! "Threads").

use benchfs_ucx::{IoBuf, IoBufMut};

use crate::storage::buffer::FixedBuf;

/// A data buffer handed to UCX by ownership.
#[derive(Debug)]
pub(super) enum DataBuf {
    /// A pool vector (see [`super::buffers`]).
    Heap(Vec<u8>),
    /// A store's registered buffer; returned to the store when dropped.
    Fixed(FixedBuf),
}

impl DataBuf {
    /// Bytes held.
    pub(super) fn len(&self) -> usize {
        match self {
            DataBuf::Heap(v) => v.len(),
            DataBuf::Fixed(f) => f.len(),
        }
    }
}

// Safety: a vector's heap storage and a registered buffer (a region of the
// store's mapping, kept mapped by the pool handle every `FixedBuf` holds)
// stay put when the value moves; `FixedBuf` owns its region exclusively
// and its `len` never exceeds its capacity.
unsafe impl IoBuf for DataBuf {
    fn stable_ptr(&self) -> *const u8 {
        match self {
            DataBuf::Heap(v) => v.as_ptr(),
            DataBuf::Fixed(f) => f.as_slice().as_ptr(),
        }
    }
    fn bytes_init(&self) -> usize {
        match self {
            DataBuf::Heap(v) => v.len(),
            DataBuf::Fixed(f) => f.len(),
        }
    }
}

// Safety: as above; UCX writes at most `bytes_total` bytes, the capacity
// of either, and `set_init` records only bytes UCX wrote.
unsafe impl IoBufMut for DataBuf {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        match self {
            DataBuf::Heap(v) => v.as_mut_ptr(),
            DataBuf::Fixed(f) => f.as_mut_full().as_mut_ptr(),
        }
    }
    fn bytes_total(&mut self) -> usize {
        match self {
            DataBuf::Heap(v) => v.capacity(),
            DataBuf::Fixed(f) => f.capacity(),
        }
    }
    unsafe fn set_init(&mut self, len: usize) {
        match self {
            // Safety: the caller's guarantee, passed on.
            DataBuf::Heap(v) => unsafe { v.set_init(len) },
            DataBuf::Fixed(f) => f.set_len(len),
        }
    }
}
