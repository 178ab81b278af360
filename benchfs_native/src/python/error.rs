//! The boundary's one error type and its one conversion to Python.
//!
//! Every function of `src/python/` returns [`BoundaryResult`]; engine
//! errors, bad arguments and errors raised by Python itself all become a
//! [`BoundaryError`] through `?`, and pyo3 turns that into the Python
//! exception here, once: OS and RPC errors as `OSError(errno, message,
//! path or node)` (Python picks `FileNotFoundError`, ...), argument errors
//! as `ValueError`, a store used after `fork()` and internal failures as
//! `RuntimeError`.

use pyo3::PyErr;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};

use crate::error::{Error, strerror};

/// Why a call across the boundary failed.
#[derive(Debug)]
pub(crate) enum BoundaryError {
    /// The engine failed (or rejected an argument it validates itself).
    Engine(Error),
    /// An argument checked at the boundary; the message names it.
    Argument(String),
    /// A bug or an unexpected state of the boundary itself.
    Internal(String),
    /// Python raised (a failed conversion, an object without the buffer
    /// protocol, ...): passed on as it is.
    Python(PyErr),
}

/// `Result` with [`BoundaryError`].
pub(crate) type BoundaryResult<T> = Result<T, BoundaryError>;

impl BoundaryError {
    /// A bad argument; `message` names it (`"offset must be ..."`).
    pub(crate) fn argument(message: impl Into<String>) -> Self {
        BoundaryError::Argument(message.into())
    }
}

impl From<Error> for BoundaryError {
    fn from(e: Error) -> Self {
        BoundaryError::Engine(e)
    }
}

impl From<PyErr> for BoundaryError {
    fn from(e: PyErr) -> Self {
        BoundaryError::Python(e)
    }
}

impl From<BoundaryError> for PyErr {
    fn from(e: BoundaryError) -> PyErr {
        match e {
            BoundaryError::Engine(e) => engine_error(e),
            BoundaryError::Argument(message) => PyValueError::new_err(message),
            BoundaryError::Internal(message) => PyRuntimeError::new_err(message),
            BoundaryError::Python(e) => e,
        }
    }
}

fn engine_error(e: Error) -> PyErr {
    match e {
        Error::Os { errno, op, path } => {
            PyOSError::new_err((errno, format!("{op} failed: {}", strerror(errno)), path))
        }
        Error::InvalidArgument { name, message } => {
            PyValueError::new_err(format!("{name}: {message}"))
        }
        Error::InvalidPath { path, reason } => {
            PyValueError::new_err(format!("invalid path {path:?}: {reason}"))
        }
        Error::Rpc {
            errno,
            node,
            op,
            detail,
        } => PyOSError::new_err((errno, format!("{op} on node {node} failed: {detail}"), node)),
        Error::Closed => PyValueError::new_err("I/O operation on a closed ChunkStore"),
        e @ Error::Forked { .. } => PyRuntimeError::new_err(e.to_string()),
    }
}
