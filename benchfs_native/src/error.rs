//! The engine's one error type.
//!
//! Kernel errors keep their errno ([`Error::Os`]); argument errors name the
//! argument ([`Error::InvalidArgument`], [`Error::InvalidPath`]). The Python
//! boundary converts these once: `Os` to `OSError(errno, message, path)`
//! (so Python picks `FileNotFoundError`, ...), the others to `ValueError`.

use std::fmt;
use std::io;

/// Every error the engine reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A system call or io_uring operation failed with `errno`.
    Os {
        /// The positive errno (`libc::ENOSPC`, ...).
        errno: i32,
        /// What was being done: `write`, `read`, `open`, ...
        op: &'static str,
        /// The logical path (or directory) the operation was about.
        path: String,
    },
    /// An argument is out of its range.
    InvalidArgument {
        /// The argument's name, as the caller spells it.
        name: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// A path that is malformed or would escape the store.
    InvalidPath {
        /// The offending path, verbatim.
        path: String,
        /// Why it is rejected.
        reason: &'static str,
    },
    /// A remote operation failed or did not answer in time: which node,
    /// which operation, and why (`errno`: the daemon's, or `ETIMEDOUT`,
    /// `ECONNRESET`, ... for transport failures).
    Rpc {
        /// The positive errno.
        errno: i32,
        /// The daemon's node name.
        node: String,
        /// The operation, e.g. `write testfile.3 chunk 12`.
        op: String,
        /// What went wrong, in words.
        detail: String,
    },
    /// The store (or its driver thread) is closed.
    Closed,
    /// The store was opened by another process (this one is a `fork()`
    /// child, which has no driver thread).
    Forked {
        /// Pid of the process that opened the store.
        owner: u32,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An OS error with `errno` for `op` on `path`.
    pub fn os(errno: i32, op: &'static str, path: impl Into<String>) -> Self {
        Error::Os {
            errno,
            op,
            path: path.into(),
        }
    }

    /// Converts an [`io::Error`], keeping its errno (`EIO` when it has none).
    pub fn from_io(err: &io::Error, op: &'static str, path: impl Into<String>) -> Self {
        Error::os(err.raw_os_error().unwrap_or(libc::EIO), op, path)
    }

    /// A bad argument `name`.
    pub fn invalid(name: &'static str, message: impl Into<String>) -> Self {
        Error::InvalidArgument {
            name,
            message: message.into(),
        }
    }

    /// The errno of an OS error.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Error::Os { errno, .. } | Error::Rpc { errno, .. } => Some(*errno),
            _ => None,
        }
    }

    /// The errno this error stands for, whatever its kind (what a POSIX
    /// caller returns): an invalid argument or path is `EINVAL`, a closed
    /// store `ESHUTDOWN`, a store used after `fork` `EIO`.
    pub fn posix_errno(&self) -> i32 {
        match self {
            Error::Os { errno, .. } | Error::Rpc { errno, .. } => *errno,
            Error::InvalidArgument { .. } | Error::InvalidPath { .. } => libc::EINVAL,
            Error::Closed => libc::ESHUTDOWN,
            Error::Forked { .. } => libc::EIO,
        }
    }
}

/// The C library's text for `errno`, without Rust's " (os error N)" suffix.
pub fn strerror(errno: i32) -> String {
    let text = io::Error::from_raw_os_error(errno).to_string();
    match text.rfind(" (os error ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Os { errno, op, path } => {
                write!(
                    f,
                    "{op} failed: {} (errno {errno}): '{path}'",
                    strerror(*errno)
                )
            }
            Error::InvalidArgument { name, message } => write!(f, "{name}: {message}"),
            Error::InvalidPath { path, reason } => write!(f, "invalid path {path:?}: {reason}"),
            Error::Rpc {
                errno,
                node,
                op,
                detail,
            } => write!(
                f,
                "{op} on node {node} failed: {detail} ({}, errno {errno})",
                strerror(*errno)
            ),
            Error::Closed => f.write_str("the store is closed"),
            Error::Forked { owner } => write!(
                f,
                "the store was opened by process {owner}; open a new one after fork()"
            ),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_error_keeps_errno_and_names_path() {
        let e = Error::os(libc::ENOSPC, "write", "a/b");
        assert_eq!(e.errno(), Some(libc::ENOSPC));
        let s = e.to_string();
        assert!(s.contains("write failed"), "{s}");
        assert!(s.contains("No space left on device"), "{s}");
        assert!(s.contains("'a/b'"), "{s}");
    }

    #[test]
    fn from_io_without_errno_is_eio() {
        let e = Error::from_io(&io::Error::other("x"), "read", "p");
        assert_eq!(e.errno(), Some(libc::EIO));
    }

    #[test]
    fn every_error_stands_for_an_errno() {
        let bad_path = Error::InvalidPath {
            path: "../x".into(),
            reason: "escapes",
        };
        assert_eq!(bad_path.errno(), None);
        assert_eq!(bad_path.posix_errno(), libc::EINVAL);
        assert_eq!(Error::invalid("n", "m").posix_errno(), libc::EINVAL);
        assert_eq!(Error::Closed.posix_errno(), libc::ESHUTDOWN);
        assert_eq!(
            Error::os(libc::ENOTEMPTY, "rmdir", "d").posix_errno(),
            libc::ENOTEMPTY
        );
    }
}
