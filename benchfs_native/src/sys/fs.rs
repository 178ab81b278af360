//! File system calls made outside the ring: the direct-I/O alignment
//! probe, `fallocate`, `ftruncate`, the network file system check, the
//! private new file a registry file is published from.

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::Path;

/// Direct I/O alignment of a file system (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DioAlign {
    /// Required alignment of file offsets and lengths.
    pub offset: u32,
    /// Required alignment of memory addresses.
    pub mem: u32,
}

impl DioAlign {
    /// Whether an I/O of `len` bytes at `offset` from `addr` may use O_DIRECT.
    #[inline]
    pub fn allows(&self, offset: u64, len: usize, addr: usize) -> bool {
        let o = u64::from(self.offset.max(1));
        let m = self.mem.max(1) as usize;
        len > 0
            && offset.is_multiple_of(o)
            && (len as u64).is_multiple_of(o)
            && addr.is_multiple_of(m)
    }
}

fn statx_dio(file: &File) -> Option<libc::statx> {
    // Safety: statx is plain data; all-zero is a valid value.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // Safety: the path is a valid NUL-terminated string, `stx` a live,
    // writable statx; AT_EMPTY_PATH makes the call stat `file` itself.
    let rc = unsafe {
        libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &raw mut stx,
        )
    };
    (rc == 0).then_some(stx)
}

fn set_direct(file: &File) -> bool {
    // Safety: fcntl with F_GETFL/F_SETFL has no memory arguments.
    unsafe {
        let fl = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        fl >= 0 && libc::fcntl(file.as_raw_fd(), libc::F_SETFL, fl | libc::O_DIRECT) == 0
    }
}

fn logical_block_size(dev: u64) -> Option<u32> {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let p = format!("/sys/dev/block/{major}:{minor}/queue/logical_block_size");
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// The O_DIRECT alignment of regular files in `dir`, or `None` when its file
/// system does not do direct I/O. Uses statx's STATX_DIOALIGN on an
/// anonymous temporary file; where that is not reported, whether O_DIRECT can
/// be set, with the device's logical block size (else 4096).
pub fn dio_alignment(dir: &Path) -> Option<DioAlign> {
    let probe_name = dir.join(format!(".dio-probe-{}", std::process::id()));
    let file = match OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)
    {
        Ok(f) => f,
        // No O_TMPFILE here: probe with a named file, removed at once.
        Err(_) => {
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&probe_name)
                .ok()?;
            let _ = std::fs::remove_file(&probe_name);
            f
        }
    };
    if let Some(stx) = statx_dio(&file)
        && stx.stx_mask & libc::STATX_DIOALIGN != 0
    {
        if stx.stx_dio_offset_align == 0 {
            return None;
        }
        return Some(DioAlign {
            offset: stx.stx_dio_offset_align,
            mem: stx.stx_dio_mem_align.max(1),
        });
    }
    if !set_direct(&file) {
        return None;
    }
    let lbs = file
        .metadata()
        .ok()
        .and_then(|m| logical_block_size(m.dev()))
        .unwrap_or(4096);
    Some(DioAlign {
        offset: lbs,
        mem: lbs,
    })
}

/// Reserves `len` bytes of `file` (mode 0: allocates and extends the size),
/// as fio does before a write job. Unsupported file systems are not an error.
pub fn fallocate(file: &File, len: u64) -> io::Result<()> {
    let len = libc::off_t::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    // Safety: fallocate has no memory arguments.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EOPNOTSUPP) => Ok(()),
        _ => Err(err),
    }
}

/// `statfs(2)` of the file system holding `path`.
pub fn statfs(path: &Path) -> io::Result<libc::statfs> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // Safety: statfs is plain data; all-zero is a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // Safety: `c` is NUL-terminated and `st` a live, writable statfs.
    if unsafe { libc::statfs(c.as_ptr(), &raw mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// The network file system `dir` is on, if any (NFS, CIFS/SMB): io_uring
/// on those has a history of kernel bugs, so the engine refuses them.
pub fn network_fs(dir: &Path) -> Option<&'static str> {
    let st = statfs(dir).ok()?;
    // The magic numbers of linux/magic.h (f_type is signed on some ABIs).
    match st.f_type as u32 {
        0x6969 => Some("NFS"),
        0xFF53_4D42 => Some("CIFS"),
        0xFE53_4D42 => Some("SMB2"),
        0x517B => Some("SMB"),
        _ => None,
    }
}

/// `ftruncate(2)`, for kernels without `IORING_OP_FTRUNCATE`.
pub fn ftruncate(fd: BorrowedFd<'_>, len: u64) -> io::Result<()> {
    let len = libc::off_t::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    // Safety: ftruncate has no memory arguments; `fd` is a live descriptor.
    let rc = unsafe { libc::ftruncate(fd.as_raw_fd(), len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the access and/or modification time of `fd` (nanoseconds since the
/// Unix epoch; `None` leaves a time as it is).
pub fn set_times(
    fd: BorrowedFd<'_>,
    atime_ns: Option<u64>,
    mtime_ns: Option<u64>,
) -> io::Result<()> {
    let ts = |t: Option<u64>| match t {
        Some(ns) => libc::timespec {
            tv_sec: i64::try_from(ns / 1_000_000_000).unwrap_or(i64::MAX),
            tv_nsec: (ns % 1_000_000_000) as i64,
        },
        None => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
    };
    let times = [ts(atime_ns), ts(mtime_ns)];
    // Safety: `times` is a live array of two timespecs; fd is open.
    let rc = unsafe { libc::futimens(fd.as_raw_fd(), times.as_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The `statvfs` of the file system holding `fd`.
pub fn statvfs(fd: BorrowedFd<'_>) -> io::Result<libc::statvfs> {
    // Safety: statvfs is plain data; all-zero is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // Safety: `st` is a live, writable statvfs; fd is open.
    if unsafe { libc::fstatvfs(fd.as_raw_fd(), &raw mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// An id of the file system `fd` is on, the same for every process of
/// this boot of this host that asks about it (bind mounts included), and
/// different on another host or after a reboot: the boot's id and the
/// device, hashed (FNV-1a); never 0.
pub fn file_system_id(fd: BorrowedFd<'_>) -> io::Result<u64> {
    // Safety: stat is plain data; all-zero is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // Safety: `st` is a live, writable stat; fd is open.
    if unsafe { libc::fstat(fd.as_raw_fd(), &raw mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let boot = std::fs::read("/proc/sys/kernel/random/boot_id")
        .ok()
        .or_else(|| super::hostname().map(String::into_bytes))
        .unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in boot.iter().chain(&st.st_dev.to_le_bytes()) {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    Ok(h.max(1))
}

/// Creates `path` (it must not exist), mode 0600 and never through a link,
/// writes `bytes` and a newline and syncs it: the temporary file a private
/// file of the registry is then published from (by rename or hard link).
pub fn write_private_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    f.write_all(bytes)?;
    f.write_all(b"\n")?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dio_align_rules() {
        let a = DioAlign {
            offset: 512,
            mem: 512,
        };
        assert!(a.allows(0, 4096, 4096));
        assert!(!a.allows(1, 4096, 4096));
        assert!(!a.allows(0, 100, 4096));
        assert!(!a.allows(0, 0, 4096));
        assert!(!a.allows(0, 512, 3));
    }

    #[test]
    fn local_disks_are_not_network_file_systems() {
        assert_eq!(network_fs(&std::env::temp_dir()), None);
    }

    #[test]
    fn probe_temp_dir() {
        // Whatever the file system, the probe answers without error.
        let _ = dio_alignment(&std::env::temp_dir());
    }
}
