//! Buffers handed to UCX by ownership.
//!
//! An operation in flight owns its buffer; the buffer comes back with the
//! result, or, when the handle is dropped early, is freed by the completion
//! callback. UCX therefore never writes to or reads from freed memory.

/// A buffer UCX may read from until the operation completes.
///
/// # Safety
/// `stable_ptr` must return a pointer valid for reads of `bytes_init`
/// bytes that does not move or change while the value is alive and not
/// accessed through `&mut` (moving the value itself must not move the
/// bytes: heap storage, not inline arrays).
pub unsafe trait IoBuf: 'static {
    /// Start of the bytes.
    fn stable_ptr(&self) -> *const u8;
    /// Number of bytes to send.
    fn bytes_init(&self) -> usize;
}

/// A buffer UCX may write into until the operation completes.
///
/// # Safety
/// `stable_mut_ptr` must return a pointer valid for writes of
/// `bytes_total` bytes, stable across moves of the value (heap storage).
pub unsafe trait IoBufMut: 'static {
    /// Start of the writable bytes.
    fn stable_mut_ptr(&mut self) -> *mut u8;
    /// Capacity UCX may fill.
    fn bytes_total(&mut self) -> usize;
    /// Record that the first `len` bytes are now initialised.
    ///
    /// # Safety
    /// The first `len` bytes must have been written.
    unsafe fn set_init(&mut self, len: usize);
}

// Safety: a Vec's heap storage does not move when the Vec is moved; the
// pointer is valid for `len` initialised bytes.
unsafe impl IoBuf for Vec<u8> {
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.len()
    }
}

// Safety: as for `Vec<u8>`.
unsafe impl IoBuf for Box<[u8]> {
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.len()
    }
}

// Safety: static data never moves or goes away.
unsafe impl IoBuf for &'static [u8] {
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.len()
    }
}

// Safety: writes go to the Vec's heap capacity, which is stable across
// moves; `set_init` only grows `len` over bytes that were written.
unsafe impl IoBufMut for Vec<u8> {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }
    fn bytes_total(&mut self) -> usize {
        self.capacity()
    }
    unsafe fn set_init(&mut self, len: usize) {
        if len > self.len() {
            // Safety: the caller guarantees the bytes up to `len` were
            // written, and `len <= capacity` as UCX never writes past
            // `bytes_total`.
            unsafe { self.set_len(len) };
        }
    }
}

// Safety: a boxed slice is fully initialised heap memory of fixed length.
unsafe impl IoBufMut for Box<[u8]> {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }
    fn bytes_total(&mut self) -> usize {
        self.len()
    }
    unsafe fn set_init(&mut self, _len: usize) {}
}
