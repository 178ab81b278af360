//! `poll` with a zero timeout: whether a descriptor has input right now.

use std::os::fd::RawFd;

/// Whether `fd` is readable now, without waiting (false on any error).
pub fn readable_now(fd: RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // Safety: one valid pollfd for the length 1, and a zero timeout; an
    // invalid descriptor is reported in `revents`, not undefined.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents & libc::POLLIN != 0
}
