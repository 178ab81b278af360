//! Signal handlers: installing one, putting back the one it replaced,
//! unblocking signals for the calling thread, and keeping `errno` intact
//! inside a handler.

use std::io;

/// The action a signal had before [`set_handler`] replaced it.
#[derive(Debug)]
pub struct SavedAction {
    sig: libc::c_int,
    old: libc::sigaction,
}

/// Makes `handler` the action of `sig` (`SA_RESTART`, empty mask) and
/// returns the action it replaced.
pub fn set_handler(
    sig: libc::c_int,
    handler: extern "C" fn(libc::c_int),
) -> io::Result<SavedAction> {
    // Safety: zeroed sigaction is a valid "no flags, empty mask" starting
    // point; the handler is an `extern "C" fn(c_int)`.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler as usize;
    act.sa_flags = libc::SA_RESTART;
    // Safety: `act.sa_mask` is a live sigset_t.
    unsafe { libc::sigemptyset(&mut act.sa_mask) };
    // Safety: zeroed is a valid out-value for the old action.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // Safety: valid signal number and live structs.
    if unsafe { libc::sigaction(sig, &act, &mut old) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(SavedAction { sig, old })
}

impl SavedAction {
    /// Puts the saved action back.
    pub fn restore(self) {
        // Safety: restores an action `sigaction` itself returned.
        unsafe { libc::sigaction(self.sig, &self.old, std::ptr::null_mut()) };
    }
}

/// The calling thread's signal mask before [`unblock`] changed it.
#[derive(Debug)]
pub struct SavedMask(libc::sigset_t);

/// Unblocks `sigs` for the calling thread (a signal that arrived while
/// blocked is delivered now) and returns the mask it replaced.
pub fn unblock(sigs: &[libc::c_int]) -> io::Result<SavedMask> {
    // Safety: a zeroed sigset_t is initialised by `sigemptyset` before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // Safety: a zeroed sigset_t is a valid out-value for the old mask.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // Safety: live sigset_t values and valid signal numbers.
    unsafe {
        libc::sigemptyset(&mut set);
        for &sig in sigs {
            libc::sigaddset(&mut set, sig);
        }
    }
    // Safety: as above; pthread_sigmask returns the error number.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, &mut old) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(SavedMask(old))
}

impl SavedMask {
    /// Puts the saved mask back on the calling thread.
    pub fn restore(self) {
        // Safety: a mask `pthread_sigmask` itself returned.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut()) };
    }
}

/// Runs `f` and then restores `errno`, so that the code a signal handler
/// interrupted does not see the result of the handler's own system calls.
/// Async-signal-safe when `f` is.
pub fn preserving_errno(f: impl FnOnce()) {
    // Safety: errno is thread-local and always addressable.
    let saved = unsafe { *libc::__errno_location() };
    f();
    // Safety: as above.
    unsafe { *libc::__errno_location() = saved };
}
