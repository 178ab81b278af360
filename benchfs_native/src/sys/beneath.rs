//! Opening a name inside a directory without ever following a symbolic
//! link: `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` relative to the
//! directory's descriptor, or `openat(O_NOFOLLOW)` where the kernel (before
//! 5.6) or a seccomp filter answers openat2 with ENOSYS. The store's names
//! are single components (no `/`), so O_NOFOLLOW on the last one is the
//! whole check in the fallback.
//!
//! A link planted in the data directory then fails with ELOOP (or EXDEV
//! when it would leave the directory) instead of reading or overwriting
//! the file it points to.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once openat2 answered ENOSYS: every later open uses the fallback.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Opens `name` in `dir` with `open(2)` `flags` (O_CLOEXEC and O_NOFOLLOW
/// are added) and `mode` (used with O_CREAT), refusing symbolic links.
pub fn open_beneath(
    dir: BorrowedFd<'_>,
    name: &CStr,
    flags: i32,
    mode: u32,
) -> io::Result<OwnedFd> {
    let flags = flags | libc::O_CLOEXEC | libc::O_NOFOLLOW;
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        match openat2(dir, name, flags, mode) {
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                NO_OPENAT2.store(true, Ordering::Relaxed);
            }
            r => return r,
        }
    }
    openat_nofollow(dir, name, flags, mode)
}

/// Whether a failed open was refused because of a symbolic link.
pub fn is_link_refusal(errno: i32) -> bool {
    errno == libc::ELOOP || errno == libc::EXDEV
}

fn openat2(dir: BorrowedFd<'_>, name: &CStr, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    // Safety: open_how is plain data; all-zero is a valid value (and the
    // kernel requires its unused fields to be zero).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    // The kernel refuses a mode without O_CREAT/O_TMPFILE (EINVAL).
    if flags & libc::O_CREAT != 0 {
        how.mode = u64::from(mode);
    }
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS;
    // Safety: `name` is a NUL-terminated string and `how` a live open_how
    // whose size is passed; the kernel reads both during the call only.
    // On success the return value is a new descriptor this process owns.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            name.as_ptr(),
            &raw const how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = i32::try_from(rc).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // Safety: `fd` was just returned by the kernel and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn openat_nofollow(dir: BorrowedFd<'_>, name: &CStr, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    // O_NOFOLLOW guards the last component only: refuse any other.
    if name.to_bytes().contains(&b'/') {
        return Err(io::Error::from_raw_os_error(libc::EXDEV));
    }
    // Safety: `name` is a NUL-terminated string read during the call only;
    // on success the result is a new descriptor this process owns.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, mode) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // Safety: `fd` was just returned by the kernel and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]
    use super::*;
    use std::os::fd::AsFd as _;

    #[test]
    fn links_are_refused_and_regular_files_open() {
        let root = std::env::temp_dir().join(format!("bf-beneath-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("inside")).unwrap();
        std::fs::write(root.join("outside"), b"secret").unwrap();
        std::fs::write(root.join("inside/plain"), b"ok").unwrap();
        std::os::unix::fs::symlink(root.join("outside"), root.join("inside/link")).unwrap();
        std::os::unix::fs::symlink("plain", root.join("inside/relative")).unwrap();
        let dir = std::fs::File::open(root.join("inside")).unwrap();
        open_beneath(dir.as_fd(), c"plain", libc::O_RDONLY, 0).unwrap();
        for name in [c"link", c"relative", c"../outside"] {
            let e = open_beneath(dir.as_fd(), name, libc::O_RDWR | libc::O_CREAT, 0o600)
                .expect_err("a link or an escape is refused");
            let errno = e.raw_os_error().unwrap();
            assert!(is_link_refusal(errno), "{name:?}: {e}");
        }
        assert_eq!(std::fs::read(root.join("outside")).unwrap(), b"secret");
        let _ = std::fs::remove_dir_all(&root);
    }
}
