//! The wake-up sockets of UCX's shared-memory transports, and datagrams on
//! them from outside the job.
//!
//! Each shared-memory interface of a worker (`posix`, `sysv`: UCT's mm
//! transports) binds a datagram socket in the abstract unix namespace
//! (`uct_mm_iface_create_signal_fd`, an autobind; UCX 1.13 up to today's
//! master) and writes its address into the FIFO's shared control block; a
//! peer that queues a message while the worker is armed sends one byte
//! there to wake it. An abstract socket has no file and no permission
//! check: its name shows in `ss -lx` and `/proc/net/unix`, and any local
//! user can send to it. Each datagram wakes a worker asleep on its event
//! fd, and makes `ucp_worker_arm` answer busy (it reads one and reports a
//! signal), so a stream of them keeps a daemon from ever sleeping. UCX has
//! no setting that binds it elsewhere (docs/TRANSPORT.md, "The wake-up
//! sockets"), so the worker guards it instead:
//!
//! * the sockets are the unix datagram sockets bound to an abstract name
//!   that appear in the process while `ucp_worker_create` runs (worker
//!   creations are serialised for it); UCX watches them from its async
//!   thread, which signals the worker's event fd;
//! * each gets `SO_PASSCRED`, so every datagram carries its sender's
//!   uid and pid;
//! * before the worker arms, and after it wakes, [`SignalSockets::drain`]
//!   looks at the queued datagrams in order: one from another uid is
//!   counted as foreign and dropped; one from the worker's own uid is a
//!   peer's wake-up and stays queued for UCX. UCX reads it when it arms
//!   the interface, and for an interface it has set aside (no endpoint of
//!   the worker uses it, so it is neither progressed nor armed with the
//!   worker) its async thread must see it queued: that is what puts the
//!   interface back into progress. A wake-up taken here instead left the
//!   peer's message unread in the FIFO until the wait's deadline. A
//!   wake-up that brought only foreign datagrams sends the worker straight
//!   back to sleep instead of into its spin.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::os::fd::RawFd;
use std::sync::{Mutex, MutexGuard};

/// Held while a worker is created, so that the sockets that appear are
/// that worker's.
static CREATING: Mutex<()> = Mutex::new(());

/// Datagrams read from the wake-up sockets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drained {
    /// From the worker's own uid: peers' wake-ups.
    pub own: u64,
    /// From other uids: not the job's.
    pub foreign: u64,
}

/// What the wake-up sockets received from outside the job, so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ForeignSignals {
    /// Datagrams from other uids.
    pub datagrams: u64,
    /// Wake-ups of the worker that brought nothing else.
    pub wakeups: u64,
    /// The uid and pid of the last sender (0 before any).
    pub last_uid: u32,
    /// Its pid.
    pub last_pid: i32,
}

/// The wake-up sockets of one worker.
#[derive(Debug)]
pub(crate) struct SignalSockets {
    fds: Vec<RawFd>,
    uid: u32,
    seen: Cell<ForeignSignals>,
}

impl SignalSockets {
    /// Before `ucp_worker_create`: the lock that serialises creations and
    /// the abstract datagram sockets the process holds already.
    pub(crate) fn before_create() -> (MutexGuard<'static, ()>, BTreeSet<RawFd>) {
        let guard = CREATING.lock().unwrap_or_else(|p| p.into_inner());
        (guard, abstract_dgram_fds())
    }

    /// After it: the sockets that appeared since `before`, each with
    /// `SO_PASSCRED` on. None (a transport set without shared memory, no
    /// `/proc`): nothing to guard.
    pub(crate) fn created_since(before: &BTreeSet<RawFd>) -> SignalSockets {
        let fds = abstract_dgram_fds()
            .difference(before)
            .copied()
            .filter(|&fd| pass_credentials(fd))
            .collect();
        SignalSockets {
            fds,
            // Safety: no arguments; cannot fail.
            uid: unsafe { libc::geteuid() },
            seen: Cell::new(ForeignSignals::default()),
        }
    }

    /// The sockets guarded.
    pub(crate) fn fds(&self) -> &[RawFd] {
        &self.fds
    }

    /// Drops the foreign datagrams at the head of each socket's queue, up
    /// to the first from the worker's own uid, which stays queued for UCX
    /// (counted in `own`). `woke`: the worker just woke from its event fd
    /// (a wake-up with only foreign datagrams is counted as theirs).
    pub(crate) fn drain(&self, woke: bool) -> Drained {
        let mut d = Drained::default();
        let mut seen = self.seen.get();
        for &fd in &self.fds {
            // The worker's thread is the only reader of the socket (UCX
            // reads it when arming, from the same thread), so the head
            // peeked is the head dropped.
            while let Some(sender) = peek_sender(fd) {
                match sender {
                    Some((uid, _)) if uid == self.uid => {
                        d.own += 1;
                        break;
                    }
                    Some((uid, pid)) => {
                        seen.last_uid = uid;
                        seen.last_pid = pid;
                    }
                    // No credentials (cannot happen with SO_PASSCRED):
                    // not provably the job's.
                    None => {}
                }
                d.foreign += 1;
                drop_head(fd);
            }
        }
        seen.datagrams += d.foreign;
        if woke && d.foreign > 0 && d.own == 0 {
            seen.wakeups += 1;
        }
        self.seen.set(seen);
        d
    }

    /// What came from outside the job so far.
    pub(crate) fn seen(&self) -> ForeignSignals {
        self.seen.get()
    }
}

/// The process's unix datagram sockets bound to an abstract name.
fn abstract_dgram_fds() -> BTreeSet<RawFd> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return BTreeSet::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd| is_socket(fd) && is_abstract_dgram(fd))
        .collect()
}

/// Whether `fd` is a socket (cheap, before any socket call).
fn is_socket(fd: RawFd) -> bool {
    std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
}

/// Whether `fd` is a unix datagram socket bound to an abstract name.
fn is_abstract_dgram(fd: RawFd) -> bool {
    let int_opt = |opt| {
        let mut v: libc::c_int = 0;
        let mut len = size_of::<libc::c_int>() as libc::socklen_t;
        // Safety: `v` and `len` are live and sized for an int option.
        let r = unsafe {
            libc::getsockopt(fd, libc::SOL_SOCKET, opt, (&raw mut v).cast(), &raw mut len)
        };
        (r == 0).then_some(v)
    };
    if int_opt(libc::SO_DOMAIN) != Some(libc::AF_UNIX)
        || int_opt(libc::SO_TYPE) != Some(libc::SOCK_DGRAM)
    {
        return false;
    }
    // Safety: sockaddr_un is plain data; all-zero is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // Safety: `addr` is writable for `len` bytes.
    let r = unsafe { libc::getsockname(fd, (&raw mut addr).cast(), &raw mut len) };
    let path_len = (len as usize).saturating_sub(size_of::<libc::sa_family_t>());
    // An abstract name: a path that starts with a NUL byte.
    r == 0 && path_len > 0 && addr.sun_path[0] == 0
}

/// Turns on `SO_PASSCRED` on `fd`.
fn pass_credentials(fd: RawFd) -> bool {
    let on: libc::c_int = 1;
    // Safety: `on` is a live int for the call.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PASSCRED,
            (&raw const on).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

/// The sender of the datagram at the head of `fd`'s queue, which stays
/// queued: `Some(sender)` (its uid and pid, when it carried credentials),
/// `None` when none is queued.
#[allow(
    clippy::option_option,
    reason = "a datagram without credentials differs from no datagram"
)]
fn peek_sender(fd: RawFd) -> Option<Option<(u32, i32)>> {
    let mut byte = [0u8; 64];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: byte.len(),
    };
    // Room for one SCM_CREDENTIALS message (CMSG_SPACE of a ucred), u64s
    // for its alignment.
    let mut control = [0u64; 8];
    // Safety: msghdr is plain data; all-zero is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&control);
    // Safety: `msg` points at live buffers of the lengths it gives.
    let n = unsafe { libc::recvmsg(fd, &raw mut msg, libc::MSG_DONTWAIT | libc::MSG_PEEK) };
    if n < 0 {
        return None;
    }
    // Safety: `msg` was filled by recvmsg; the macros walk its control
    // buffer within `msg_controllen`.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&raw const msg) };
    while !cmsg.is_null() {
        // Safety: a header inside the control buffer, as CMSG_FIRSTHDR /
        // CMSG_NXTHDR give it.
        let h = unsafe { &*cmsg };
        if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_CREDENTIALS {
            // Safety: an SCM_CREDENTIALS message holds one ucred; read
            // unaligned, as the control buffer promises no more.
            let cred: libc::ucred =
                unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
            return Some(Some((cred.uid, cred.pid)));
        }
        // Safety: as above.
        cmsg = unsafe { libc::CMSG_NXTHDR(&raw const msg, cmsg) };
    }
    Some(None)
}

/// Drops the datagram at the head of `fd`'s queue, without waiting.
fn drop_head(fd: RawFd) {
    let mut byte = [0u8; 1];
    // Safety: a live one-byte buffer; the rest of the datagram is dropped
    // with it.
    unsafe { libc::recv(fd, byte.as_mut_ptr().cast(), 1, libc::MSG_DONTWAIT) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_bound_while_creating_is_found_with_credentials_on() {
        let (guard, before) = SignalSockets::before_create();
        // An autobind, as UCX's mm interfaces do it.
        // Safety: plain socket calls on a fresh descriptor.
        let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM, 0) };
        assert!(fd >= 0);
        // Safety: sockaddr_un is plain data; all-zero is a valid value.
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let len = size_of::<libc::sa_family_t>() as libc::socklen_t;
        // Safety: `addr` is live for `len` bytes.
        assert_eq!(unsafe { libc::bind(fd, (&raw const addr).cast(), len) }, 0);
        let found = SignalSockets::created_since(&before);
        drop(guard);
        assert_eq!(found.fds(), [fd]);
        // Safety: sockaddr_un is plain data; all-zero is a valid value.
        let mut name: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        let mut nlen = size_of::<libc::sockaddr_un>() as libc::socklen_t;
        // Safety: `name` is writable for `nlen` bytes.
        let named = unsafe { libc::getsockname(fd, (&raw mut name).cast(), &raw mut nlen) };
        assert_eq!(named, 0);
        let send = |uid: Option<u32>| send_as(fd, &name, nlen, uid);
        // A datagram of our own uid is a peer's wake-up: it stays queued
        // for UCX, however often the worker looks.
        assert_eq!(send(None), 1);
        assert_eq!(found.drain(true), Drained { own: 1, foreign: 0 });
        assert_eq!(found.drain(false), Drained { own: 1, foreign: 0 });
        assert_eq!(found.seen(), ForeignSignals::default());
        drop_head(fd);
        assert_eq!(found.drain(false), Drained::default());
        // Safety: no arguments; cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            // Only root may send another uid's credentials.
            assert_eq!(send(Some(65534)), -1);
        } else {
            // Two outsiders, a peer's wake-up, another outsider: those
            // ahead of the wake-up are dropped, the one behind it waits
            // until UCX has read it.
            for uid in [Some(65534), Some(65534), None, Some(65533)] {
                assert_eq!(send(uid), 1);
            }
            assert_eq!(found.drain(true), Drained { own: 1, foreign: 2 });
            assert_eq!(found.seen().last_uid, 65534);
            drop_head(fd);
            assert_eq!(found.drain(true), Drained { own: 0, foreign: 1 });
            let seen = found.seen();
            assert_eq!((seen.datagrams, seen.wakeups), (3, 1));
            assert_eq!(seen.last_uid, 65533);
            assert_eq!(found.drain(false), Drained::default());
        }
        // Safety: our own descriptor, closed once.
        unsafe { libc::close(fd) };
    }

    /// Sends one byte from `fd` to `name`, with the credentials of `uid`
    /// (the process's own with `None`).
    fn send_as(
        fd: RawFd,
        name: &libc::sockaddr_un,
        nlen: libc::socklen_t,
        uid: Option<u32>,
    ) -> isize {
        let mut byte = [0u8];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut control = [0u64; 8];
        // Safety: msghdr is plain data; all-zero is a valid value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = (name as *const libc::sockaddr_un).cast_mut().cast();
        msg.msg_namelen = nlen;
        msg.msg_iov = &raw mut iov;
        msg.msg_iovlen = 1;
        if let Some(uid) = uid {
            let cred = libc::ucred {
                // Safety: no arguments; cannot fail.
                pid: unsafe { libc::getpid() },
                uid,
                gid: uid,
            };
            msg.msg_control = control.as_mut_ptr().cast();
            // Safety: CMSG_SPACE / CMSG_LEN only compute sizes.
            msg.msg_controllen = unsafe { libc::CMSG_SPACE(size_of_val(&cred) as u32) } as usize;
            // Safety: the control buffer holds one ucred message, and the
            // header and data written lie inside it.
            unsafe {
                let c = libc::CMSG_FIRSTHDR(&raw const msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_CREDENTIALS;
                (*c).cmsg_len = libc::CMSG_LEN(size_of_val(&cred) as u32) as usize;
                std::ptr::write_unaligned(libc::CMSG_DATA(c).cast(), cred);
            }
        }
        // Safety: `msg` points at live buffers of the lengths it gives.
        unsafe { libc::sendmsg(fd, &raw const msg, 0) }
    }
}
