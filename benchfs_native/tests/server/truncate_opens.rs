//! A truncate opens its data object once: the size and the modification
//! time are set on the one descriptor (the opens counted by inotify).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use benchfs_native::storage::layout::backing_name;

use crate::harness::*;

/// The opens of files in one directory, as inotify reports them.
struct Opens {
    fd: OwnedFd,
}

impl Opens {
    fn watch(dir: &Path) -> Opens {
        // SAFETY: takes no pointers.
        let raw = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(raw >= 0, "inotify: {}", std::io::Error::last_os_error());
        // SAFETY: `raw` is a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let path = CString::new(dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: `path` is a live NUL-terminated string.
        let wd = unsafe { libc::inotify_add_watch(fd.as_raw_fd(), path.as_ptr(), libc::IN_OPEN) };
        assert!(
            wd >= 0,
            "inotify watch: {}",
            std::io::Error::last_os_error()
        );
        Opens { fd }
    }

    /// How often `name` was opened since the last call. An open's event is
    /// queued before the open returns, so every open the daemon made
    /// before its reply is counted.
    fn of(&self, name: &str) -> usize {
        let mut buf = vec![0u8; 64 << 10];
        let mut count = 0;
        loop {
            // SAFETY: `buf` is live and writable for its whole length.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                assert_eq!(e.raw_os_error(), Some(libc::EAGAIN), "inotify read: {e}");
                return count;
            }
            // Events: wd, mask, cookie, len (u32 each), then `len` bytes of
            // name padded with NULs.
            let events = &buf[..n as usize];
            let mut at = 0;
            while at + 16 <= events.len() {
                let len = u32::from_ne_bytes(events[at + 12..at + 16].try_into().unwrap());
                let end = at + 16 + len as usize;
                let opened = events[at + 16..end].split(|&b| b == 0).next().unwrap();
                if opened == name.as_bytes() {
                    count += 1;
                }
                at = end;
            }
        }
    }
}

#[test]
fn a_truncate_opens_its_data_object_once() {
    watchdog(120, || {
        let mut d = Daemon::start("truncate-opens", |_| {});
        let mut c = RawClient::connect(&d.record);
        let opens = Opens::watch(&d.data_dir);
        let name = backing_name("@5").unwrap();
        let truncate = |size| Request::Truncate { path: "@5", size };
        let stat = Request::Stat {
            path: "@5",
            data: true,
        };
        // Absent: made (one open), then truncated and stamped on the
        // descriptor that made it.
        c.call(&truncate(4096), Vec::new()).ok();
        assert_eq!(opens.of(&name), 1, "opens of a truncate that made the file");
        // Present and open already: no open at all.
        let before = now_unix_ns();
        c.call(&truncate(10), Vec::new()).ok();
        let after = now_unix_ns();
        assert_eq!(opens.of(&name), 0, "opens of a truncate of an open file");
        // The modification time is the daemon's clock at the truncate.
        let a = attr(c.call(&stat, Vec::new()).ok());
        assert_eq!(a.size, 10);
        assert!(
            (before..=after).contains(&a.mtime_unix_ns),
            "mtime {} outside {before}..={after}",
            a.mtime_unix_ns
        );
        c.shutdown(false);
        d.join();
    });
}
