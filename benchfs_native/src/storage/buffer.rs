//! The bounded pool of registered (fixed) I/O buffers.
//!
//! One anonymous mapping on transparent huge pages is cut into `count`
//! buffers of `size` bytes; the ring registers each as one fixed buffer
//! (index = buffer index) for `ReadFixed`/`WriteFixed`. A buffer within one
//! huge page (1 MiB buffers always are) is physically contiguous, so an
//! O_DIRECT transfer from it reaches the disk as one request: from base
//! pages a 1 MiB one is 256 segments, split in two for a disk that takes
//! fewer (virtio's 254). A [`FixedBuf`] owns one buffer
//! exclusively and returns it to the pool when dropped; it is moved into an
//! operation on submission and handed back with the completion, so the
//! kernel is the only one touching it while it is in flight. When the pool is
//! empty, [`BufferPool::acquire`] waits (backpressure), it never fails.

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use crate::sys::AnonMapping;

/// Alignment of every buffer (a page: enough for any O_DIRECT alignment).
pub const BUF_ALIGN: usize = 4096;
/// Most buffers one ring can register (`IORING_MAX_REG_BUFFERS`).
pub const MAX_BUFFERS: usize = 1 << 14;

struct Shared {
    /// Unmapped only when the last `FixedBuf` and the pool are gone, i.e.
    /// when no operation can be using it (the driver keeps the pool alive
    /// until every operation has completed); who may touch which buffer is
    /// governed by the free list (one owner per buffer).
    region: AnonMapping,
    size: usize,
    count: usize,
    free: Mutex<Vec<u32>>,
    available: Condvar,
    waits: AtomicU64,
}

/// A bounded pool of page-aligned buffers for registration with a ring.
#[derive(Clone)]
pub struct BufferPool {
    shared: Arc<Shared>,
}

impl fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferPool")
            .field("count", &self.shared.count)
            .field("size", &self.shared.size)
            .field("free", &self.free_count())
            .finish()
    }
}

impl BufferPool {
    /// `count` buffers of `size` bytes (`size` a multiple of 4096, `count`
    /// at most [`MAX_BUFFERS`]).
    pub fn new(count: usize, size: usize) -> io::Result<BufferPool> {
        let einval = || io::Error::from_raw_os_error(libc::EINVAL);
        if count == 0 || count > MAX_BUFFERS || size == 0 || !size.is_multiple_of(BUF_ALIGN) {
            return Err(einval());
        }
        let len = count.checked_mul(size).ok_or_else(einval)?;
        let region = AnonMapping::huge(len)?;
        let free = (0..count as u32).rev().collect();
        Ok(BufferPool {
            shared: Arc::new(Shared {
                region,
                size,
                count,
                free: Mutex::new(free),
                available: Condvar::new(),
                waits: AtomicU64::new(0),
            }),
        })
    }

    /// Size of one buffer.
    pub fn buf_size(&self) -> usize {
        self.shared.size
    }

    /// Number of buffers.
    pub fn count(&self) -> usize {
        self.shared.count
    }

    /// Buffers currently free.
    pub fn free_count(&self) -> usize {
        self.shared
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// How often a caller found the pool empty and had to wait.
    pub fn waits(&self) -> u64 {
        self.shared.waits.load(Ordering::Relaxed)
    }

    /// Counts a wait that a caller did by other means (see the store).
    pub fn note_wait(&self) {
        self.shared.waits.fetch_add(1, Ordering::Relaxed);
    }

    /// The iovecs to register, in buffer-index order.
    pub fn iovecs(&self) -> Vec<libc::iovec> {
        let base = self.shared.region.base().as_ptr();
        (0..self.shared.count)
            .map(|i| libc::iovec {
                iov_base: base.wrapping_add(i * self.shared.size).cast(),
                iov_len: self.shared.size,
            })
            .collect()
    }

    /// Whether `other` is the same pool.
    pub fn same_pool(&self, other: &BufferPool) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// A free buffer, or `None` when all are taken.
    pub fn try_acquire(&self) -> Option<FixedBuf> {
        let idx = self
            .shared
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()?;
        Some(FixedBuf {
            pool: self.clone(),
            index: idx,
            len: 0,
        })
    }

    /// A free buffer, waiting for one when all are taken.
    pub fn acquire(&self) -> FixedBuf {
        self.acquire_counting(true)
    }

    /// As [`BufferPool::acquire`], without counting a wait (for a caller
    /// that counted it already).
    pub fn acquire_uncounted(&self) -> FixedBuf {
        self.acquire_counting(false)
    }

    fn acquire_counting(&self, count: bool) -> FixedBuf {
        let mut free = self
            .shared
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if count && free.is_empty() {
            self.note_wait();
        }
        loop {
            if let Some(idx) = free.pop() {
                return FixedBuf {
                    pool: self.clone(),
                    index: idx,
                    len: 0,
                };
            }
            free = self
                .shared
                .available
                .wait(free)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn release(&self, index: u32) {
        self.shared
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(index);
        self.shared.available.notify_one();
    }
}

/// Exclusive ownership of one registered buffer, with a length of valid
/// bytes. Returned to its pool when dropped.
pub struct FixedBuf {
    pool: BufferPool,
    index: u32,
    len: usize,
}

impl fmt::Debug for FixedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FixedBuf")
            .field("index", &self.index)
            .field("len", &self.len)
            .finish()
    }
}

impl FixedBuf {
    /// Index of the buffer in its pool (= its registered buffer index).
    #[inline]
    pub fn index(&self) -> u16 {
        // MAX_BUFFERS is 2^14, so every index fits.
        self.index as u16
    }

    /// Capacity in bytes.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.pool.shared.size
    }

    /// Valid bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no byte is valid.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets the number of valid bytes (clamped to the capacity).
    #[inline]
    pub fn set_len(&mut self, len: usize) {
        self.len = len.min(self.capacity());
    }

    /// The pool this buffer belongs to.
    pub fn pool(&self) -> &BufferPool {
        &self.pool
    }

    /// Start address of the buffer.
    #[inline]
    pub fn addr(&self) -> usize {
        self.base_ptr() as usize
    }

    #[inline]
    fn base_ptr(&self) -> *mut u8 {
        self.pool
            .shared
            .region
            .base()
            .as_ptr()
            .wrapping_add(self.index as usize * self.pool.shared.size)
    }

    /// The valid bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        // Safety: the buffer lies inside the live mapping (index < count),
        // `len <= capacity`, and this `FixedBuf` is its only owner; while an
        // operation is in flight the `FixedBuf` is owned by the driver, so
        // no reference can exist then.
        unsafe { std::slice::from_raw_parts(self.base_ptr(), self.len) }
    }

    /// The whole buffer, for filling (bytes past `len` hold old data).
    #[inline]
    pub fn as_mut_full(&mut self) -> &mut [u8] {
        // Safety: as in `as_slice`, and `&mut self` makes this the only
        // reference to the buffer.
        unsafe { std::slice::from_raw_parts_mut(self.base_ptr(), self.capacity()) }
    }

    /// Copies `data` into the buffer and sets `len` (at most the capacity).
    #[inline]
    pub fn fill_from(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.capacity());
        self.as_mut_full()[..n].copy_from_slice(&data[..n]);
        self.len = n;
        n
    }

    /// Pointer for an SQE reading into the buffer at `at` (for the kernel).
    #[inline]
    pub(crate) fn io_ptr_mut(&mut self, at: usize) -> *mut u8 {
        self.base_ptr().wrapping_add(at.min(self.capacity()))
    }

    /// Pointer for an SQE writing from the buffer at `at` (for the kernel).
    #[inline]
    pub(crate) fn io_ptr(&self, at: usize) -> *const u8 {
        self.base_ptr().wrapping_add(at.min(self.capacity()))
    }
}

impl Drop for FixedBuf {
    fn drop(&mut self) {
        self.pool.release(self.index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn buffers_are_aligned_disjoint_and_returned() {
        let pool = BufferPool::new(4, 8192).expect("pool");
        let mut bufs: Vec<_> = (0..4).map(|_| pool.try_acquire().expect("buf")).collect();
        assert!(pool.try_acquire().is_none());
        for (i, b) in bufs.iter_mut().enumerate() {
            assert_eq!(b.addr() % BUF_ALIGN, 0);
            b.fill_from(&vec![i as u8; 8192]);
        }
        for (i, b) in bufs.iter().enumerate() {
            assert!(b.as_slice().iter().all(|&x| x == i as u8));
        }
        drop(bufs);
        assert_eq!(pool.free_count(), 4);
    }

    #[test]
    fn acquire_waits_for_a_release() {
        let pool = BufferPool::new(1, 4096).expect("pool");
        let held = pool.acquire();
        let p2 = pool.clone();
        let t = std::thread::spawn(move || p2.acquire().index());
        // The wait is counted under the lock before blocking: once it shows, the thread waits.
        let deadline = Instant::now() + Duration::from_secs(60); // only a hang guard
        while pool.waits() == 0 {
            assert!(Instant::now() < deadline, "the second acquire never waited");
            std::thread::yield_now();
        }
        assert!(!t.is_finished());
        drop(held);
        assert_eq!(t.join().expect("join"), 0);
        assert_eq!(pool.waits(), 1);
    }

    #[test]
    fn bad_geometry_is_einval() {
        assert!(BufferPool::new(0, 4096).is_err());
        assert!(BufferPool::new(1, 100).is_err());
        assert!(BufferPool::new(MAX_BUFFERS + 1, 4096).is_err());
    }
}
