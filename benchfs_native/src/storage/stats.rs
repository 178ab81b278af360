//! Counters of a driver, its buffer pool and fd cache. Updated by the
//! thread that turns the ring with relaxed atomics (no locks), read from
//! any thread.

use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters, shared between a driver and its readers.
#[derive(Debug, Default)]
pub struct Counters {
    /// `io_uring_enter` calls that submitted at least one operation.
    pub submits: AtomicU64,
    /// Operations submitted (sum of the batch sizes).
    pub sqes: AtomicU64,
    /// Operations completed.
    pub completed_ops: AtomicU64,
    /// Operations queued or in the kernel right now.
    pub in_flight: AtomicU64,
    /// Data operations on O_DIRECT descriptors.
    pub direct_ops: AtomicU64,
    /// Data operations on buffered descriptors.
    pub buffered_ops: AtomicU64,
    /// Descriptor lookups served by the fd cache.
    pub fd_cache_hits: AtomicU64,
    /// Descriptor lookups that opened the file.
    pub fd_cache_misses: AtomicU64,
}

#[inline]
pub(crate) fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// A snapshot of a store's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// `io_uring_enter` calls that submitted work.
    pub submits: u64,
    /// Operations submitted; `sqes / submits` is the mean io_depth.
    pub sqes: u64,
    /// Operations completed.
    pub completed_ops: u64,
    /// Operations queued or in the kernel.
    pub in_flight: u64,
    /// Buffers in the pool.
    pub pool_buffers: u64,
    /// Buffers free right now.
    pub pool_free: u64,
    /// Times a caller found the pool empty and waited.
    pub pool_waits: u64,
    /// Data operations with O_DIRECT.
    pub direct_ops: u64,
    /// Data operations through the page cache.
    pub buffered_ops: u64,
    /// fd cache hits.
    pub fd_cache_hits: u64,
    /// fd cache misses (opens).
    pub fd_cache_misses: u64,
}

impl Counters {
    /// Snapshot, with the pool's figures filled in by the caller.
    pub fn snapshot(&self) -> StoreStats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        StoreStats {
            submits: g(&self.submits),
            sqes: g(&self.sqes),
            completed_ops: g(&self.completed_ops),
            in_flight: g(&self.in_flight),
            direct_ops: g(&self.direct_ops),
            buffered_ops: g(&self.buffered_ops),
            fd_cache_hits: g(&self.fd_cache_hits),
            fd_cache_misses: g(&self.fd_cache_misses),
            ..StoreStats::default()
        }
    }
}
