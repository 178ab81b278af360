//! The store's options and limits.

use crate::error::{Error, Result};
use crate::storage::buffer::MAX_BUFFERS;
use crate::trace::TraceConfig;

/// Largest `length` of one read call (1 GiB).
pub const MAX_READ: usize = 1 << 30;
/// Largest chunk size (1 GiB).
pub const MAX_CHUNK: u64 = 1 << 30;
/// Largest buffer size (256 MiB).
pub const MAX_BUFFER: usize = 256 << 20;
/// Largest total registered memory of one store (16 GiB).
pub const MAX_POOL_BYTES: usize = 16 << 30;
/// Largest file offset + length the store accepts (2^62).
pub const MAX_OFFSET: u64 = 1 << 62;

/// Options of [`ChunkStore::open`](super::ChunkStore::open).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOptions {
    /// Bytes per chunk: a multiple of 512, at most 1 GiB. Default 4 MiB.
    pub chunk_size: u64,
    /// Bytes per registered buffer (the largest single I/O): a multiple of
    /// 4096, at most 256 MiB. Default 1 MiB.
    pub buffer_size: usize,
    /// Registered buffers (the most I/Os in flight): 1..=16384. Default 64.
    pub pool_buffers: usize,
    /// SQ entries of the ring, 1..=32768 (rounded up to a power of two).
    pub ring_entries: u32,
    /// Never use O_DIRECT.
    pub buffered: bool,
    /// Record a trace.
    pub trace: Option<TraceConfig>,
    /// Open descriptors kept by the fd cache.
    pub fd_cache_capacity: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            chunk_size: 4 << 20,
            buffer_size: 1 << 20,
            pool_buffers: 64,
            ring_entries: 256,
            buffered: false,
            trace: None,
            fd_cache_capacity: 512,
        }
    }
}

impl StoreOptions {
    /// Checks every option, naming the bad one.
    pub fn validate(&self) -> Result<()> {
        if self.chunk_size < 512
            || self.chunk_size > MAX_CHUNK
            || !self.chunk_size.is_multiple_of(512)
        {
            return Err(Error::invalid(
                "chunk_size",
                format!(
                    "must be a multiple of 512 between 512 and {MAX_CHUNK}, got {}",
                    self.chunk_size
                ),
            ));
        }
        if self.buffer_size < 4096
            || self.buffer_size > MAX_BUFFER
            || !self.buffer_size.is_multiple_of(4096)
        {
            return Err(Error::invalid(
                "buffer_size",
                format!(
                    "must be a multiple of 4096 between 4096 and {MAX_BUFFER}, got {}",
                    self.buffer_size
                ),
            ));
        }
        if self.pool_buffers == 0 || self.pool_buffers > MAX_BUFFERS {
            return Err(Error::invalid(
                "pool_buffers",
                format!(
                    "must be between 1 and {MAX_BUFFERS}, got {}",
                    self.pool_buffers
                ),
            ));
        }
        if self.pool_buffers.saturating_mul(self.buffer_size) > MAX_POOL_BYTES {
            return Err(Error::invalid(
                "pool_buffers",
                format!(
                    "pool_buffers * buffer_size must be at most {MAX_POOL_BYTES} bytes, got {} * {}",
                    self.pool_buffers, self.buffer_size
                ),
            ));
        }
        if self.ring_entries == 0 || self.ring_entries > 32768 {
            return Err(Error::invalid(
                "ring_entries",
                format!("must be between 1 and 32768, got {}", self.ring_entries),
            ));
        }
        if self.fd_cache_capacity == 0 {
            return Err(Error::invalid("fd_cache_capacity", "must be at least 1"));
        }
        if let Some(t) = &self.trace {
            crate::trace::writer::validate_node(&t.node)?;
        }
        Ok(())
    }
}
