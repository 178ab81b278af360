//! The encoding's primitives: the [`Writer`] the encoders put an op's
//! fixed part with, its mirror the bounds-checked [`Reader`] the decoders
//! read it with, and [`DecodeError`].
//!
//! Each op's encoder and decoder name the same fields in the same order
//! (`w.u32(mode)` / `r.u32("mode")`, `w.zero::<4>()` / `r.zero::<4>("reserved")`),
//! so the two read as one layout.

use std::fmt;

use crate::error::Error;

/// Why a message does not decode, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset of the offending field in the message.
    pub offset: usize,
    /// The field's name.
    pub field: &'static str,
    /// What is wrong.
    pub reason: String,
}

impl DecodeError {
    pub(crate) fn new(offset: usize, field: &'static str, reason: impl Into<String>) -> Self {
        DecodeError {
            offset,
            field,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte {} ({}): {}", self.offset, self.field, self.reason)
    }
}

impl std::error::Error for DecodeError {}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Error::invalid("rpc message", e.to_string())
    }
}

/// A little-endian writer of up to `N` bytes (a message's fixed part, a
/// directory entry's), the mirror of [`Reader`]. The encoders write at
/// positions known when they are compiled, so once inlined each field's
/// bounds check folds away.
pub(super) struct Writer<const N: usize> {
    buf: [u8; N],
    pos: usize,
}

impl<const N: usize> Writer<N> {
    #[inline(always)]
    pub(super) fn new() -> Self {
        Writer {
            buf: [0; N],
            pos: 0,
        }
    }

    #[inline(always)]
    fn put<const K: usize>(&mut self, bytes: [u8; K]) {
        self.buf[self.pos..self.pos + K].copy_from_slice(&bytes);
        self.pos += K;
    }

    #[inline(always)]
    pub(super) fn u16(&mut self, v: u16) {
        self.put(v.to_le_bytes());
    }
    #[inline(always)]
    pub(super) fn u32(&mut self, v: u32) {
        self.put(v.to_le_bytes());
    }
    #[inline(always)]
    pub(super) fn u64(&mut self, v: u64) {
        self.put(v.to_le_bytes());
    }

    /// Writes a reserved field (zero).
    #[inline(always)]
    pub(super) fn zero<const K: usize>(&mut self) {
        self.put([0u8; K]);
    }

    /// The bytes written so far.
    #[inline(always)]
    pub(super) fn bytes(&self) -> &[u8] {
        &self.buf[..self.pos]
    }
}

/// A bounds-checked little-endian reader that knows its absolute offset.
pub(super) struct Reader<'a> {
    pub(super) buf: &'a [u8],
    pub(super) pos: usize,
}

impl<'a> Reader<'a> {
    #[inline]
    pub(super) fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(end) => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(self.truncated(n, field)),
        }
    }

    /// Kept out of line: the decoders' every field read inlines the
    /// check, not the message.
    #[cold]
    #[inline(never)]
    fn truncated(&self, n: usize, field: &'static str) -> DecodeError {
        DecodeError::new(
            self.pos,
            field,
            format!(
                "truncated: needs {n} bytes, {} left",
                self.buf.len().saturating_sub(self.pos)
            ),
        )
    }

    #[inline]
    pub(super) fn array<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<[u8; N], DecodeError> {
        let s = self.take(N, field)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    #[inline]
    pub(super) fn u16(&mut self, field: &'static str) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array(field)?))
    }
    #[inline]
    pub(super) fn u32(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }
    #[inline]
    pub(super) fn u64(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }

    /// Reads a field that must be zero.
    pub(super) fn zero<const N: usize>(&mut self, field: &'static str) -> Result<(), DecodeError> {
        let at = self.pos;
        let a = self.array::<N>(field)?;
        if a.iter().any(|&b| b != 0) {
            return Err(DecodeError::new(at, field, "reserved field is not zero"));
        }
        Ok(())
    }
}
