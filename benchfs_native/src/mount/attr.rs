//! Engine attributes to the kernel's.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{FileAttr, FileType};

use crate::rpc::wire::Attr;

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
        // Safety: geteuid and getegid have no preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        Owner { uid, gid }
    }
}

fn time(ns: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(ns)
}

/// The kind of `mode`.
pub fn kind(mode: u32) -> FileType {
    if mode & libc::S_IFMT == libc::S_IFDIR {
        FileType::Directory
    } else {
        FileType::RegularFile
    }
}

/// The kernel's attributes of node `ino` from the engine's.
pub fn file_attr(ino: u64, a: &Attr, owner: Owner) -> FileAttr {
    let kind = kind(a.mode);
    let mtime = time(a.mtime_unix_ns);
    FileAttr {
        ino,
        size: a.size,
        blocks: a.size.div_ceil(512),
        atime: mtime,
        mtime,
        ctime: mtime,
        crtime: mtime,
        kind,
        perm: (a.mode & 0o7777) as u16,
        nlink: if kind == FileType::Directory { 2 } else { 1 },
        uid: owner.uid,
        gid: owner.gid,
        rdev: 0,
        blksize: BLKSIZE,
        flags: 0,
    }
}

/// The root's attributes while the engine has none for it.
pub fn root_attr(owner: Owner) -> FileAttr {
    let a = Attr {
        size: 0,
        mtime_unix_ns: 0,
        mode: libc::S_IFDIR | 0o755,
    };
    file_attr(super::inodes::ROOT, &a, owner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_directories_keep_their_kind_and_mode() {
        let o = Owner { uid: 7, gid: 8 };
        let f = file_attr(
            5,
            &Attr {
                size: 1000,
                mtime_unix_ns: 1_500_000_000,
                mode: libc::S_IFREG | 0o640,
            },
            o,
        );
        assert_eq!(f.kind, FileType::RegularFile);
        assert_eq!(f.perm, 0o640);
        assert_eq!(f.blocks, 2);
        assert_eq!(f.uid, 7);
        assert_eq!(f.mtime, UNIX_EPOCH + Duration::from_millis(1500));
        assert_eq!(root_attr(o).kind, FileType::Directory);
    }
}
