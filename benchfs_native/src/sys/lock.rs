//! `flock(2)`: an advisory lock the kernel drops when the process dies,
//! so a crashed daemon never leaves its data directory locked.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Takes an exclusive lock on `file` without waiting: `Ok(false)` when
/// another open file description holds it.
pub fn try_lock_exclusive(file: &File) -> io::Result<bool> {
    // Safety: flock takes a descriptor and flags, no memory.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}
