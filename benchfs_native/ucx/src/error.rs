//! The one error type of the transport: a UCX status, its name, and the
//! operation (or the wait) that produced it.

use std::ffi::CStr;
use std::fmt;

use crate::sys;

/// Raw UCX status code (`ucs_status_t`).
pub type Status = sys::ucs_status_t;

/// A failed UCX operation or an expired wait.
///
/// `status` is the `ucs_status_t` UCX returned (an expired deadline uses
/// `UCS_ERR_TIMED_OUT`), `name` its text from `ucs_status_string`, and `op`
/// names what was attempted or waited for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    op: String,
    status: Status,
    name: &'static str,
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error for `op` that failed with `status`.
    pub fn new(op: impl Into<String>, status: Status) -> Self {
        Error {
            op: op.into(),
            status,
            name: status_name(status),
        }
    }

    /// An expired deadline while waiting for `what`.
    pub fn timeout(what: impl Into<String>) -> Self {
        Error::new(what, sys::UCS_ERR_TIMED_OUT)
    }

    /// The operation or wait that failed.
    pub fn op(&self) -> &str {
        &self.op
    }

    /// The raw `ucs_status_t`.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The status as UCX names it (`ucs_status_string`).
    pub fn status_name(&self) -> &'static str {
        self.name
    }

    /// True when a deadline expired (`UCS_ERR_TIMED_OUT`), also for a UCX
    /// endpoint timeout.
    pub fn is_timeout(&self) -> bool {
        self.status == sys::UCS_ERR_TIMED_OUT || self.status == sys::UCS_ERR_ENDPOINT_TIMEOUT
    }

    /// True when the peer is known to be gone (connection reset, endpoint
    /// timeout, unreachable).
    pub fn is_peer_failure(&self) -> bool {
        matches!(
            self.status,
            sys::UCS_ERR_CONNECTION_RESET
                | sys::UCS_ERR_ENDPOINT_TIMEOUT
                | sys::UCS_ERR_UNREACHABLE
                | sys::UCS_ERR_REJECTED
                | sys::UCS_ERR_NOT_CONNECTED
        ) || (self.status <= sys::UCS_ERR_FIRST_ENDPOINT_FAILURE
            && self.status >= sys::UCS_ERR_LAST_ENDPOINT_FAILURE)
    }

    /// The closest `errno`, for callers that surface errors as `OSError`.
    pub fn errno(&self) -> i32 {
        match self.status {
            sys::UCS_ERR_TIMED_OUT | sys::UCS_ERR_ENDPOINT_TIMEOUT => libc::ETIMEDOUT,
            sys::UCS_ERR_CONNECTION_RESET => libc::ECONNRESET,
            sys::UCS_ERR_UNREACHABLE => libc::EHOSTUNREACH,
            sys::UCS_ERR_NOT_CONNECTED => libc::ENOTCONN,
            sys::UCS_ERR_REJECTED => libc::ECONNREFUSED,
            sys::UCS_ERR_NO_MEMORY => libc::ENOMEM,
            sys::UCS_ERR_INVALID_PARAM => libc::EINVAL,
            sys::UCS_ERR_BUSY => libc::EBUSY,
            sys::UCS_ERR_CANCELED => libc::ECANCELED,
            sys::UCS_ERR_MESSAGE_TRUNCATED => libc::EMSGSIZE,
            sys::UCS_ERR_UNSUPPORTED => libc::EOPNOTSUPP,
            sys::UCS_ERR_NO_RESOURCE => libc::EAGAIN,
            sys::UCS_ERR_IO_ERROR => libc::EIO,
            _ => libc::EIO,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} (ucs_status_t {})",
            self.op, self.name, self.status
        )
    }
}

impl std::error::Error for Error {}

impl From<Error> for std::io::Error {
    fn from(e: Error) -> Self {
        std::io::Error::new(
            std::io::Error::from_raw_os_error(e.errno()).kind(),
            e.to_string(),
        )
    }
}

/// The name UCX gives to `status`.
pub fn status_name(status: Status) -> &'static str {
    // Safety: `ucs_status_string` accepts any status value and returns a
    // pointer to a static, NUL-terminated string (or "unknown error").
    let ptr = unsafe { sys::ucs_status_string(status) };
    if ptr.is_null() {
        return "unknown status";
    }
    // Safety: the pointer is non-null and refers to a static C string that
    // lives as long as the library is loaded, i.e. for the whole process.
    unsafe { CStr::from_ptr(ptr) }
        .to_str()
        .unwrap_or("unknown status")
}

/// `Ok(())` for `UCS_OK`, the error naming `op` otherwise.
pub(crate) fn check(op: &str, status: Status) -> Result<()> {
    if status == sys::UCS_OK {
        Ok(())
    } else {
        Err(Error::new(op, status))
    }
}

/// What a `ucs_status_ptr_t` returned by an `*_nbx` call means.
pub(crate) enum StatusPtr {
    /// Completed at once (NULL).
    Done,
    /// Failed at once.
    Failed(Status),
    /// In flight: the UCX request handle.
    Pending(*mut std::ffi::c_void),
}

/// Decodes the `UCS_PTR_IS_ERR` / `UCS_PTR_STATUS` macros.
pub(crate) fn decode_ptr(ptr: sys::ucs_status_ptr_t) -> StatusPtr {
    let v = ptr as usize;
    if v == 0 {
        StatusPtr::Done
    } else if v >= (sys::UCS_ERR_LAST as isize) as usize {
        StatusPtr::Failed(v as isize as Status)
    } else {
        StatusPtr::Pending(ptr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_pointers_decode_like_the_ucs_macros() {
        assert!(matches!(decode_ptr(std::ptr::null_mut()), StatusPtr::Done));
        let err = sys::UCS_ERR_NO_MEMORY as isize as usize as sys::ucs_status_ptr_t;
        assert!(matches!(decode_ptr(err), StatusPtr::Failed(s) if s == sys::UCS_ERR_NO_MEMORY));
        let last = sys::UCS_ERR_LAST as isize as usize as sys::ucs_status_ptr_t;
        assert!(matches!(decode_ptr(last), StatusPtr::Failed(_)));
        let mut x = 0u64;
        let p = (&mut x as *mut u64).cast();
        assert!(matches!(decode_ptr(p), StatusPtr::Pending(q) if q == p));
    }

    #[test]
    fn errors_carry_status_name_and_operation() {
        let e = Error::new("ucp_ep_create", sys::UCS_ERR_UNREACHABLE);
        assert_eq!(e.op(), "ucp_ep_create");
        assert_eq!(e.status(), sys::UCS_ERR_UNREACHABLE);
        assert_eq!(e.status_name(), "Destination is unreachable");
        assert!(e.is_peer_failure());
        assert_eq!(e.errno(), libc::EHOSTUNREACH);
        assert!(check("x", sys::UCS_OK).is_ok());
    }
}
