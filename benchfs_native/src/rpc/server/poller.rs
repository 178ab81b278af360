//! An eventfd and an epoll set: how the event loop sleeps without a timer.
//!
//! The loop sleeps in `epoll_wait` on the UCX worker's event fd, the
//! storage pool's completion eventfd and the signal eventfd; whoever has
//! news writes its eventfd (or UCX signals its own), and the loop wakes.

use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
use std::time::Duration;

/// A non-blocking eventfd.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    /// A new eventfd (counter 0, non-blocking, close-on-exec).
    pub fn new() -> io::Result<EventFd> {
        // Safety: eventfd has no memory preconditions; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // Safety: `fd` is a fresh descriptor that nothing else owns.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// The descriptor, for an epoll set.
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
        // Safety: reads 8 bytes into a live u64 from our own descriptor.
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

/// An epoll set of readable-event sources, each with a token.
#[derive(Debug)]
pub struct Epoll(OwnedFd);

impl Epoll {
    /// An empty epoll set.
    pub fn new() -> io::Result<Epoll> {
        // Safety: no preconditions; the result is checked.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // Safety: a fresh descriptor that nothing else owns.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Watches `fd` for readability, reporting `token`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // Safety: a live epoll descriptor and a valid event struct.
        let r = unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Sleeps until a watched descriptor is readable or `timeout` passes;
    /// fills `events` and returns how many. A signal (EINTR) returns 0.
    pub fn wait(&self, events: &mut [libc::epoll_event], timeout: Duration) -> io::Result<usize> {
        let ms = i32::try_from(timeout.as_millis().min(i32::MAX as u128)).unwrap_or(i32::MAX);
        let cap = i32::try_from(events.len()).unwrap_or(i32::MAX);
        // Safety: `events` is a live buffer of `cap` entries.
        let n = unsafe { libc::epoll_wait(self.0.as_raw_fd(), events.as_mut_ptr(), cap, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(0);
            }
            return Err(e);
        }
        Ok(n as usize)
    }
}
