//! The bytes of a Python buffer (`bytes`, `bytearray`, `memoryview`, numpy
//! arrays, ...) for a call that releases the GIL: the one place of the
//! boundary that reads Python-owned memory, and its safety contract.
//!
//! A `bytes` object cannot change, so its bytes are borrowed. Any other
//! exporter may be written by another Python thread while the GIL is
//! released, and a `&[u8]` over memory that changes under it is undefined
//! behaviour: those bytes are copied out first, with the GIL held (as
//! PyO3's `PyBuffer::to_vec` does), and the call reads the copy.

use pyo3::buffer::PyUntypedBuffer;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::error::{BoundaryError, BoundaryResult};

/// The bytes of a Python object, readable as `&[u8]` with the GIL released.
pub(crate) enum InputBytes<'py> {
    /// An immutable `bytes` object, borrowed.
    Immutable(Bound<'py, PyBytes>),
    /// A mutable exporter's bytes, copied while the GIL was held.
    Copied(Vec<u8>),
}

impl<'py> InputBytes<'py> {
    /// The bytes of `data`: a `bytes` object, or any C-contiguous buffer.
    pub(crate) fn new(data: &Bound<'py, PyAny>) -> BoundaryResult<Self> {
        if let Ok(bytes) = data.cast_exact::<PyBytes>() {
            return Ok(InputBytes::Immutable(bytes.clone()));
        }
        let view = PyUntypedBuffer::get(data)?;
        if !view.is_c_contiguous() {
            return Err(BoundaryError::argument(
                "data must be a C-contiguous buffer",
            ));
        }
        Ok(InputBytes::Copied(copy_out(data.py(), &view)))
    }

    /// The bytes, valid while `self` lives.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            InputBytes::Immutable(bytes) => bytes.as_bytes(),
            InputBytes::Copied(bytes) => bytes,
        }
    }
}

/// The `len_bytes` bytes of a C-contiguous export, copied through a raw
/// pointer: no reference to the exporter's memory is ever formed.
fn copy_out(_gil: Python<'_>, view: &PyUntypedBuffer) -> Vec<u8> {
    let len = view.len_bytes();
    let mut out = Vec::with_capacity(len);
    if len > 0 {
        // Safety: the GIL is held (`_gil`), so no Python thread writes, and `view`
        // a buffer export of the object, so the exporter keeps `len` bytes
        // at `buf_ptr` alive and unresized, and a C-contiguous export is
        // one run of `len` bytes; `out` has room for `len` bytes and does
        // not overlap them. The bytes are initialised once copied.
        unsafe {
            std::ptr::copy_nonoverlapping(view.buf_ptr().cast::<u8>(), out.as_mut_ptr(), len);
            out.set_len(len);
        }
    }
    out
}
