//! Borrowing the bytes of a Python buffer (`bytes`, `bytearray`,
//! `memoryview`, numpy arrays, ...) without copying them: the one place of
//! the boundary that reads Python-owned memory, and its safety contract.

use pyo3::buffer::PyUntypedBuffer;
use pyo3::prelude::*;

use super::error::{BoundaryError, BoundaryResult};

/// A buffer export of a Python object, readable as `&[u8]` for as long as
/// the export lives. Hold it across `Python::detach` and copy the bytes
/// out (into registered buffers, into send buffers) before it is dropped.
pub(crate) struct BorrowedBytes {
    view: PyUntypedBuffer,
}

impl BorrowedBytes {
    /// Exports the buffer of `data`, which must be C-contiguous.
    pub(crate) fn new(data: &Bound<'_, PyAny>) -> BoundaryResult<Self> {
        let view = PyUntypedBuffer::get(data)?;
        if !view.is_c_contiguous() {
            return Err(BoundaryError::argument(
                "data must be a C-contiguous buffer",
            ));
        }
        Ok(BorrowedBytes { view })
    }

    /// The exported bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        let len = self.view.len_bytes();
        if len == 0 {
            return &[];
        }
        // Safety: `self.view` holds a buffer export of the object until
        // `self` is dropped, and the slice borrows `self`: the exporter
        // keeps the `len` bytes at `buf_ptr` alive and unresized meanwhile
        // (a bytearray refuses to resize while exported), and a C-contiguous
        // export is one run of `len` bytes. Another Python thread could
        // still change the contents while the GIL is released: the bytes
        // read are then unspecified, as with any C extension that releases
        // the GIL around a copy; every caller copies them before use.
        unsafe { std::slice::from_raw_parts(self.view.buf_ptr().cast::<u8>(), len) }
    }
}
