//! A namespace record: what a path is and its attributes.

/// The root directory's id.
pub const ROOT_INO: u64 = 1;

/// File, directory, symbolic link, FIFO, socket or device node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A regular file (its data on the data daemons, by id).
    File,
    /// A directory (its entries are the records whose parent it is).
    Dir,
    /// A symbolic link: its target is kept beside the record, never
    /// followed here.
    Symlink,
    /// A FIFO: a name and attributes only (no data).
    Fifo,
    /// A unix socket's name: a name and attributes only.
    Socket,
    /// A block device node: a name, attributes and its device number
    /// (never opened: the mount is `nodev`).
    BlockDev,
    /// A character device node, as a block device's.
    CharDev,
}

impl Kind {
    /// The kind a create's mode asks for by its type bits (none or
    /// `S_IFREG`: a file); `EINVAL` for a directory's or a link's (they
    /// have their own ops).
    pub fn of_create_mode(mode: u32) -> Result<Kind, i32> {
        match mode & libc::S_IFMT {
            0 | libc::S_IFREG => Ok(Kind::File),
            libc::S_IFIFO => Ok(Kind::Fifo),
            libc::S_IFSOCK => Ok(Kind::Socket),
            libc::S_IFBLK => Ok(Kind::BlockDev),
            libc::S_IFCHR => Ok(Kind::CharDev),
            _ => Err(libc::EINVAL),
        }
    }

    /// A name without data or target: a FIFO, a socket or a device.
    pub fn is_special(self) -> bool {
        matches!(
            self,
            Kind::Fifo | Kind::Socket | Kind::BlockDev | Kind::CharDev
        )
    }

    /// A block or character device node (its number in `target_len`).
    pub fn is_device(self) -> bool {
        matches!(self, Kind::BlockDev | Kind::CharDev)
    }
}

/// The mode bits a record keeps: permissions with set-user-ID,
/// set-group-ID and sticky (no type bits). Keeping set-user-ID is safe:
/// the engine never executes a file, and the mount is `nosuid`.
pub fn permission_bits(mode: u32) -> u32 {
    mode & 0o7777
}

/// `mode` after a change of owner of a file: without set-user-ID, and
/// without set-group-ID when the group may execute it (set-group-ID
/// without group execute is a locking mark Linux keeps).
pub fn chown_mode(mode: u32) -> u32 {
    let mut m = mode & !libc::S_ISUID;
    if m & libc::S_IXGRP != 0 {
        m &= !libc::S_ISGID;
    }
    m
}

/// One path's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// File or directory.
    pub kind: Kind,
    /// Unique id (a file's data is addressed by it).
    pub ino: u64,
    /// Permission, set-user-ID, set-group-ID and sticky bits (no type bits).
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Access time, ns since the Unix epoch.
    pub atime: u64,
    /// Modification time (a file's until data is written after it).
    pub mtime: u64,
    /// Status change time.
    pub ctime: u64,
    /// A directory an rmdir is removing: it takes no new entries.
    pub removing: bool,
    /// A symbolic link's target length (its size), a device node's
    /// number (`st_rdev`); 0 for the others.
    pub target_len: u32,
    /// One of several names of a file or link (a hard link): its link
    /// count is kept by the daemon that handed out its id.
    pub linked: bool,
    /// A directory's subdirectories (its nlink is 2 more), counted by the
    /// mkdirs and rmdirs under it.
    pub subdirs: u32,
}

impl Record {
    /// A new record made at `now`.
    pub fn new(kind: Kind, ino: u64, mode: u32, owner: (u32, u32), now: u64) -> Record {
        Record {
            kind,
            ino,
            mode: permission_bits(mode),
            uid: owner.0,
            gid: owner.1,
            atime: now,
            mtime: now,
            ctime: now,
            removing: false,
            target_len: 0,
            linked: false,
            subdirs: 0,
        }
    }

    /// The root directory.
    pub fn root(now: u64, uid: u32, gid: u32) -> Record {
        Record::new(Kind::Dir, ROOT_INO, 0o755, (uid, gid), now)
    }

    /// Links as far as this record knows: files and symbolic links 1,
    /// directories 2 and one per subdirectory (a hard-linked name's count
    /// is its home daemon's: [`super::Namespace::link_count`]).
    pub fn nlink(&self) -> u32 {
        match self.kind {
            Kind::File
            | Kind::Symlink
            | Kind::Fifo
            | Kind::Socket
            | Kind::BlockDev
            | Kind::CharDev => 1,
            Kind::Dir => self.subdirs.saturating_add(2),
        }
    }

    /// The id whose data a removal of this record must remove: a file's;
    /// 0 for a symbolic link, a FIFO, a socket or a device, which have no
    /// data.
    pub fn data_id(&self) -> u64 {
        match self.kind {
            Kind::File | Kind::Dir => self.ino,
            _ => 0,
        }
    }
}
