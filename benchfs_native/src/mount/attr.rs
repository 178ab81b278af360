//! Engine attributes to the kernel's.
//!
//! Daemons that hold a namespace report every field (`ino` non-zero); an
//! attribute without an id (daemons without a namespace) gets the mount
//! process's owner and its modification time for all three times.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{FileAttr, FileType};

use crate::rpc::client::{Attr, FileKind};

/// `st_blksize`: the I/O size tools such as `cp` use; one FUSE request.
const BLKSIZE: u32 = super::options::MAX_IO;

/// Who owns what the engine does not record an owner for.
#[derive(Debug, Clone, Copy)]
pub struct Owner {
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
}

impl Owner {
    /// The mount process's effective ids.
    pub fn current() -> Owner {
        Owner {
            uid: crate::sys::effective_uid(),
            gid: crate::sys::effective_gid(),
        }
    }
}

fn time(ns: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(ns)
}

/// The kernel's file type of an engine kind.
pub fn file_type(kind: FileKind) -> FileType {
    match kind {
        FileKind::Dir => FileType::Directory,
        FileKind::File => FileType::RegularFile,
        FileKind::Symlink => FileType::Symlink,
        FileKind::Fifo => FileType::NamedPipe,
        FileKind::Socket => FileType::Socket,
        FileKind::BlockDev => FileType::BlockDevice,
        FileKind::CharDev => FileType::CharDevice,
    }
}

/// The engine's id of `a`, if it has one.
pub fn engine_ino(a: &Attr) -> Option<u64> {
    (a.ino != 0).then_some(a.ino)
}

/// The kernel's attributes of node `ino` from the engine's.
pub fn file_attr(ino: u64, a: &Attr, owner: Owner) -> FileAttr {
    let kind = FileKind::of_mode(a.mode);
    let full = engine_ino(a).is_some();
    let mtime = time(a.mtime_unix_ns);
    let (atime, ctime) = if full {
        (time(a.atime_unix_ns), time(a.ctime_unix_ns))
    } else {
        (mtime, mtime)
    };
    let (uid, gid) = if full {
        (a.uid, a.gid)
    } else {
        (owner.uid, owner.gid)
    };
    let dir = kind == FileKind::Dir;
    // A device node's size carries its number; it has no size.
    let (size, rdev) = if kind.is_device() {
        (0, u32::try_from(a.size).unwrap_or(0))
    } else {
        (a.size, 0)
    };
    FileAttr {
        ino,
        size,
        blocks: if full { a.blocks } else { size.div_ceil(512) },
        atime,
        mtime,
        ctime,
        crtime: ctime,
        kind: file_type(kind),
        perm: (a.mode & 0o7777) as u16,
        nlink: match (full, dir) {
            (true, _) if a.nlink > 0 => a.nlink,
            (_, true) => 2,
            _ => 1,
        },
        uid,
        gid,
        rdev,
        blksize: BLKSIZE,
        flags: 0,
    }
}

/// The root's attributes from daemons that hold no namespace.
pub fn root_attr(owner: Owner) -> FileAttr {
    let a = Attr {
        mode: libc::S_IFDIR | 0o755,
        ..Attr::default()
    };
    file_attr(super::inodes::ROOT, &a, owner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_attributes_pass_through() {
        let o = Owner { uid: 7, gid: 8 };
        let f = file_attr(
            5,
            &Attr {
                ino: 5,
                kind: FileKind::File,
                size: 1000,
                blocks: 8,
                mode: libc::S_IFREG | 0o640,
                uid: 1000,
                gid: 100,
                nlink: 1,
                atime_unix_ns: 1_000_000_000,
                mtime_unix_ns: 1_500_000_000,
                ctime_unix_ns: 2_000_000_000,
            },
            o,
        );
        assert_eq!(f.kind, FileType::RegularFile);
        assert_eq!(f.perm, 0o640);
        assert_eq!((f.blocks, f.uid, f.gid), (8, 1000, 100));
        assert_eq!(f.atime, UNIX_EPOCH + Duration::from_secs(1));
        assert_eq!(f.mtime, UNIX_EPOCH + Duration::from_millis(1500));
        assert_eq!(f.ctime, UNIX_EPOCH + Duration::from_secs(2));
    }

    #[test]
    fn attributes_without_an_id_get_the_mount_owner() {
        let o = Owner { uid: 7, gid: 8 };
        let f = file_attr(
            9,
            &Attr {
                size: 1000,
                mode: libc::S_IFREG | 0o600,
                mtime_unix_ns: 3,
                ..Attr::default()
            },
            o,
        );
        assert_eq!((f.uid, f.gid, f.blocks, f.nlink), (7, 8, 2, 1));
        assert_eq!(f.atime, f.mtime);
        let r = root_attr(o);
        assert_eq!((r.kind, r.nlink), (FileType::Directory, 2));
    }
}
