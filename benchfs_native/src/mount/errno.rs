//! Engine errors to the errno a program sees.
//!
//! A daemon's own errno passes through (`ENOENT`, `EEXIST`, `ENOSPC`, ...).
//! A lost or broken connection to a daemon is `EIO`, the errno programs
//! expect of a device that failed; a missed deadline stays `ETIMEDOUT`.

use crate::error::Error;

/// The errno for `e`.
pub fn errno_of(e: &Error) -> libc::c_int {
    match e {
        Error::Os { errno, .. } | Error::Rpc { errno, .. } => transport_to_eio(*errno),
        Error::InvalidArgument { .. } | Error::InvalidPath { .. } => libc::EINVAL,
        Error::Closed | Error::Forked { .. } => libc::EIO,
    }
}

fn transport_to_eio(errno: i32) -> libc::c_int {
    match errno {
        libc::ECONNRESET
        | libc::ECONNREFUSED
        | libc::ECONNABORTED
        | libc::ENOTCONN
        | libc::EPIPE
        | libc::ESHUTDOWN
        | libc::EHOSTUNREACH
        | libc::ENETUNREACH
        | libc::EHOSTDOWN
        | libc::ENETDOWN
        | libc::EBADMSG
        | libc::EPROTO => libc::EIO,
        0 => libc::EIO,
        n => n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemon_errnos_pass_through() {
        for n in [
            libc::ENOENT,
            libc::EEXIST,
            libc::ENOTEMPTY,
            libc::ENOSPC,
            libc::EXDEV,
        ] {
            assert_eq!(errno_of(&Error::os(n, "stat", "a")), n);
        }
        assert_eq!(
            errno_of(&Error::os(libc::ETIMEDOUT, "read", "a")),
            libc::ETIMEDOUT
        );
    }

    #[test]
    fn a_lost_daemon_is_eio() {
        let e = Error::Rpc {
            errno: libc::ECONNRESET,
            node: "n0".into(),
            op: "read".into(),
            detail: "gone".into(),
        };
        assert_eq!(errno_of(&e), libc::EIO);
        assert_eq!(errno_of(&Error::Closed), libc::EIO);
        assert_eq!(errno_of(&Error::invalid("offset", "too big")), libc::EINVAL);
    }
}
