//! The stop-signal guard on a thread that blocked the stop signals first,
//! as the daemon processes do: a signal that came while they were blocked
//! reaches the guard once it is installed, and one that comes after the
//! guard is gone stays pending instead of killing the process. One test:
//! the guard is one per process.

use benchfs_native::rpc::server::SignalGuard;

fn sigterm_set() -> libc::sigset_t {
    // Safety: a zeroed sigset_t is initialised by `sigemptyset`.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // Safety: a live sigset_t and a valid signal number.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
    }
    set
}

/// SIGTERM to this thread only (it stays with this thread while blocked).
fn sigterm_to_this_thread() {
    // Safety: this thread's own handle and a valid signal number.
    let rc = unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGTERM) };
    assert_eq!(rc, 0);
}

fn sigterm_pending() -> bool {
    // Safety: a zeroed sigset_t is a valid out-value for `sigpending`.
    let mut pending: libc::sigset_t = unsafe { std::mem::zeroed() };
    // Safety: a live out-value; then a live set and a valid signal number.
    unsafe {
        assert_eq!(libc::sigpending(&mut pending), 0);
        libc::sigismember(&pending, libc::SIGTERM) == 1
    }
}

#[test]
fn a_blocked_stop_signal_reaches_the_guard_and_none_after_it_is_fatal() {
    let set = sigterm_set();
    // Safety: a live set; the old mask is not wanted.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    assert_eq!(rc, 0);

    // During start-up: held back, not lost.
    sigterm_to_this_thread();
    assert!(sigterm_pending());
    let guard = SignalGuard::install().expect("install the guard");
    assert_eq!(guard.received(), Some(libc::SIGTERM));
    assert!(!sigterm_pending());
    drop(guard);

    // After the stop: blocked again, so pending rather than fatal.
    sigterm_to_this_thread();
    assert!(sigterm_pending());
    let mut taken = 0;
    // Safety: a live set and out-value; the pending signal is taken at once.
    let got = unsafe { libc::sigwait(&set, &mut taken) };
    assert_eq!((got, taken), (0, libc::SIGTERM));
}
