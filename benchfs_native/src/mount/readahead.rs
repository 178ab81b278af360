//! The kernel's readahead on the mount. FUSE caps it at its backing
//! device's `read_ahead_kb` (128 KiB by default) whatever `max_readahead`
//! the mount asked for, so a program's buffered 1 MiB reads would reach
//! the mount as 128 KiB requests, served one at a time. Raised to
//! [`MAX_IO`] where this process may (root).

use std::path::Path;

use super::options::MAX_IO;

/// Sets the readahead of the file system mounted at `mountpoint` (an
/// absolute path without symbolic links) to [`MAX_IO`].
pub fn raise(mountpoint: &Path) -> std::io::Result<()> {
    // The kernel applies the readahead of the mount's INIT reply (at most
    // the 128 KiB it offered at mount time) when that reply comes, which
    // can be after the mount is live: a raise before it would be undone.
    // The kernel holds every request until INIT is done, so once a statfs
    // has an answer (whichever), the raise stays.
    let _ = crate::sys::statfs(mountpoint);
    let info = std::fs::read_to_string("/proc/self/mountinfo")?;
    let Some(device) = device_of(&info, mountpoint) else {
        return Err(std::io::Error::from_raw_os_error(libc::ENOENT));
    };
    std::fs::write(
        format!("/sys/class/bdi/{device}/read_ahead_kb"),
        (MAX_IO / 1024).to_string(),
    )
}

/// The `major:minor` of the last mount at `mountpoint` in `mountinfo`.
fn device_of(mountinfo: &str, mountpoint: &Path) -> Option<String> {
    let wanted = mountpoint.to_str()?;
    mountinfo.lines().rev().find_map(|line| {
        let mut fields = line.split(' ');
        let device = fields.nth(2)?;
        let point = fields.nth(1)?;
        (unescape(point) == wanted).then(|| device.to_owned())
    })
}

/// A mountinfo field with its octal escapes (`\040` for a space) undone.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let code = bytes.get(i + 1..i + 4).and_then(|d| {
            std::str::from_utf8(d)
                .ok()
                .and_then(|d| u8::from_str_radix(d, 8).ok())
        });
        match (bytes[i], code) {
            (b'\\', Some(c)) => {
                out.push(c);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "\
22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
43 27 0:39 / /tmp/a\\040b/mnt rw,nosuid,nodev - fuse.benchfs benchfs rw
44 27 0:40 / /tmp/c rw - fuse.benchfs benchfs rw
45 27 0:41 / /tmp/c rw - fuse.benchfs benchfs rw
";

    #[test]
    fn finds_the_device_of_a_mount_point_with_escapes() {
        assert_eq!(
            device_of(INFO, Path::new("/tmp/a b/mnt")).as_deref(),
            Some("0:39")
        );
    }

    #[test]
    fn the_last_mount_at_a_point_wins_and_unknown_points_have_none() {
        assert_eq!(
            device_of(INFO, Path::new("/tmp/c")).as_deref(),
            Some("0:41")
        );
        assert_eq!(device_of(INFO, Path::new("/tmp/a")), None);
    }
}
