//! Unmounting (`umount2`), for the FUSE mount's own shutdown.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

/// How [`unmount`] detaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmount {
    /// Fails with `EBUSY` while files are open.
    Plain,
    /// Aborts a FUSE connection first (`MNT_FORCE`).
    Force,
    /// Detaches now, frees when the last file closes (`MNT_DETACH`).
    Lazy,
}

/// `umount2(path)`; needs `CAP_SYS_ADMIN` (`EPERM` otherwise).
pub fn unmount(path: &Path, how: Unmount) -> io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let flags = libc::UMOUNT_NOFOLLOW
        | match how {
            Unmount::Plain => 0,
            Unmount::Force => libc::MNT_FORCE,
            Unmount::Lazy => libc::MNT_DETACH,
        };
    // Safety: `c` is a valid NUL-terminated path; umount2 reads it only.
    if unsafe { libc::umount2(c.as_ptr(), flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
