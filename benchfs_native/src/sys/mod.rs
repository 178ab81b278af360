//! Every libc call of the engine, each behind a small checked wrapper that
//! returns `io::Result` (or `Option`) and carries its own safety argument.
//! Other modules use libc's constants and types, never its functions.
//!
//! A leaf: it uses nothing else of the crate, so storage, rpc and the
//! daemon all build on it without knowing each other.
//!
//! * [`beneath`]: opening a name inside a directory, never through a
//!   symbolic link (openat2, O_NOFOLLOW fallback).
//! * [`fs`]: direct-I/O alignment probe, `fallocate`, `ftruncate`, the
//!   network file system check.
//! * [`eventfd`]: the eventfd every sleeping loop is woken through.
//! * [`park_wake`]: an eventfd written only while its owner sleeps, and
//!   why no wake-up is lost.
//! * [`epoll`]: the epoll set the daemon's event loop sleeps in.
//! * [`mmap`]: anonymous mappings (the registered buffer region, the
//!   client's transfer buffers on huge pages).
//! * [`signals`]: installing and restoring signal handlers.
//! * [`host`]: the host name.
//! * [`limits`]: the open-file limit, raised to the hard one.
//! * [`random`]: `getrandom` (session keys, nonces, channel tokens) and
//!   the effective uid.
//! * [`lock`]: `flock`, the data directory's one-daemon lock.
//! * [`poll`]: whether a descriptor has input now.
//! * [`run_queue`]: whether a thread waits for a CPU (`/proc/loadavg`).
//! * [`regex`]: a POSIX basic regular expression (`regcomp`/`regexec`).

pub mod beneath;
pub mod epoll;
pub mod eventfd;
pub mod fs;
pub mod host;
pub mod kernel;
pub mod limits;
pub mod lock;
pub mod mmap;
pub mod mount;
pub mod park_wake;
pub mod poll;
pub mod random;
pub mod regex;
pub mod run_queue;
pub mod signals;

pub use beneath::{is_link_refusal, open_beneath};
pub use epoll::Epoll;
pub use eventfd::{EventFd, notify_raw};
pub use fs::{
    DioAlign, dio_alignment, fallocate, file_system_id, ftruncate, network_fs, set_times, statfs,
    statvfs,
};
pub use host::hostname;
pub use lock::try_lock_exclusive;
pub use mmap::AnonMapping;
pub use park_wake::ParkWake;
pub use poll::readable_now;
pub use random::{effective_gid, effective_uid, fill_random, random_u64};
pub use regex::Regex;
pub use run_queue::RunQueue;
pub use signals::{SavedAction, SavedMask, preserving_errno, set_handler, unblock};
