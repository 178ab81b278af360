//! eventfd: a counter a thread (or a signal handler) writes to wake
//! whoever polls it.

use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};

/// A non-blocking, close-on-exec eventfd.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    /// A new eventfd (counter 0).
    pub fn new() -> io::Result<EventFd> {
        // Safety: eventfd has no memory arguments; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // Safety: `fd` is a fresh descriptor that nothing else owns.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// The descriptor, for a poll set or a ring.
    pub fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Makes the eventfd readable.
    pub fn notify(&self) {
        notify_raw(self.raw());
    }

    /// Resets the counter; returns it (0 when nothing was pending).
    pub fn drain(&self) -> u64 {
        let mut v: u64 = 0;
        // Safety: reads at most 8 bytes into a live u64 from our own
        // descriptor; a failure (EAGAIN when the counter is already zero)
        // leaves `v` at 0.
        let n = unsafe { libc::read(self.raw(), (&raw mut v).cast(), 8) };
        if n == 8 { v } else { 0 }
    }
}

/// Adds 1 to the eventfd `fd`. Async-signal-safe (one `write`); a full
/// counter (EAGAIN) is already readable, so errors are ignored.
pub fn notify_raw(fd: RawFd) {
    let one: u64 = 1;
    // Safety: writes 8 bytes from a live u64; a bad or closed fd only
    // makes the call fail.
    let _ = unsafe { libc::write(fd, (&raw const one).cast(), 8) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_counts_and_drain_resets() {
        let fd = EventFd::new().expect("eventfd");
        assert_eq!(fd.drain(), 0);
        fd.notify();
        fd.notify();
        assert_eq!(fd.drain(), 2);
        assert_eq!(fd.drain(), 0);
    }
}
