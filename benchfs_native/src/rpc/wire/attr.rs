//! What a reply says of a file: its kind, its attributes ([`Attr`]) and a
//! daemon's totals ([`StatFsReply`]), with their encoding both ways.

use super::codec::{DecodeError, Reader, Writer};

/// What a namespace entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum FileKind {
    /// A regular file.
    #[default]
    File,
    /// A directory.
    Dir,
    /// A symbolic link (its target kept in its record, never followed by
    /// the engine).
    Symlink,
    /// A FIFO (a name only: the kernel of the node that opens it joins
    /// its readers and writers).
    Fifo,
    /// A unix socket's name (a name only, as a FIFO).
    Socket,
    /// A block device node (a name and a device number, never opened).
    BlockDev,
    /// A character device node, as a block device's.
    CharDev,
}

impl FileKind {
    /// The kind an `st_mode` names (`S_IFDIR`: a directory, `S_IFLNK`: a
    /// symbolic link, `S_IFIFO`, `S_IFSOCK`, else a file).
    pub fn of_mode(mode: u32) -> FileKind {
        match mode & libc::S_IFMT {
            libc::S_IFDIR => FileKind::Dir,
            libc::S_IFLNK => FileKind::Symlink,
            libc::S_IFIFO => FileKind::Fifo,
            libc::S_IFSOCK => FileKind::Socket,
            libc::S_IFBLK => FileKind::BlockDev,
            libc::S_IFCHR => FileKind::CharDev,
            _ => FileKind::File,
        }
    }

    /// Whether the kind is a name without data or target (a FIFO, a
    /// socket, a device).
    pub fn is_special(self) -> bool {
        matches!(
            self,
            FileKind::Fifo | FileKind::Socket | FileKind::BlockDev | FileKind::CharDev
        )
    }

    /// Whether the kind is a device node: its [`Attr::size`] is its number.
    pub fn is_device(self) -> bool {
        matches!(self, FileKind::BlockDev | FileKind::CharDev)
    }

    /// The `S_IF*` type bits.
    pub fn type_bits(self) -> u32 {
        match self {
            FileKind::File => libc::S_IFREG,
            FileKind::Dir => libc::S_IFDIR,
            FileKind::Symlink => libc::S_IFLNK,
            FileKind::Fifo => libc::S_IFIFO,
            FileKind::Socket => libc::S_IFSOCK,
            FileKind::BlockDev => libc::S_IFBLK,
            FileKind::CharDev => libc::S_IFCHR,
        }
    }

    /// Lower-case name (`file`, `dir`, `symlink`, `fifo`, `socket`,
    /// `blockdev`, `chardev`).
    pub fn name(self) -> &'static str {
        match self {
            FileKind::File => "file",
            FileKind::Dir => "dir",
            FileKind::Symlink => "symlink",
            FileKind::Fifo => "fifo",
            FileKind::Socket => "socket",
            FileKind::BlockDev => "blockdev",
            FileKind::CharDev => "chardev",
        }
    }
}

/// Attributes of a file or directory (create, open, stat, mkdir, setattr
/// and data-stat replies). On the wire the kind is the type bits of `mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Attr {
    /// Stable id for the entry's life (a file's data id); the root is 1.
    pub ino: u64,
    /// File, directory or symbolic link (the type bits of `mode`).
    pub kind: FileKind,
    /// Size in bytes (a symbolic link's: its target's length; a device
    /// node's: its number, `st_rdev`, as it has no size).
    pub size: u64,
    /// 512-byte units allocated.
    pub blocks: u64,
    /// `st_mode`: file type bits and permissions.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Links: directories 2, files and symbolic links their names' count.
    /// From a name's owner, 0 for one of several names of a file: the
    /// count is its home daemon's (link_count).
    pub nlink: u32,
    /// Last access, nanoseconds since the Unix epoch.
    pub atime_unix_ns: u64,
    /// Last modification, nanoseconds since the Unix epoch.
    pub mtime_unix_ns: u64,
    /// Last status change, nanoseconds since the Unix epoch.
    pub ctime_unix_ns: u64,
}

/// A daemon's totals (statfs reply): its data directory's file system and
/// its namespace records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatFsReply {
    /// `f_frsize` of the data directory's file system.
    pub block_size: u64,
    /// `f_blocks`.
    pub blocks: u64,
    /// `f_bfree`.
    pub blocks_free: u64,
    /// `f_bavail`.
    pub blocks_avail: u64,
    /// Namespace records held (the root not counted).
    pub files: u64,
    /// `f_ffree`.
    pub files_free: u64,
    /// `f_namemax`.
    pub name_max: u32,
    /// Which file system the data directory is on, the same for every
    /// daemon on it (on one host: its boot and device), so that a client
    /// counts its space once.
    pub fs_id: u64,
}

/// Writes `a` ([`ATTR_LEN`](super::ATTR_LEN) bytes): `ino, size, blocks:
/// u64; mode, uid, gid, nlink: u32; atime, mtime, ctime: u64`. The type
/// bits of `mode` are those of `a.kind`.
#[inline(always)]
pub(super) fn put_attr<const N: usize>(w: &mut Writer<N>, a: &Attr) {
    w.u64(a.ino);
    w.u64(a.size);
    w.u64(a.blocks);
    w.u32((a.mode & !libc::S_IFMT) | a.kind.type_bits());
    w.u32(a.uid);
    w.u32(a.gid);
    w.u32(a.nlink);
    w.u64(a.atime_unix_ns);
    w.u64(a.mtime_unix_ns);
    w.u64(a.ctime_unix_ns);
}

/// Reads an [`Attr`]; type bits other than a file's, a directory's, a
/// symbolic link's, a FIFO's or a socket's are refused.
pub(super) fn read_attr(r: &mut Reader<'_>) -> Result<Attr, DecodeError> {
    let ino = r.u64("ino")?;
    let size = r.u64("size")?;
    let blocks = r.u64("blocks")?;
    let at = r.pos;
    let mode = r.u32("mode")?;
    let t = mode & libc::S_IFMT;
    if !matches!(
        t,
        libc::S_IFREG
            | libc::S_IFDIR
            | libc::S_IFLNK
            | libc::S_IFIFO
            | libc::S_IFSOCK
            | libc::S_IFBLK
            | libc::S_IFCHR
    ) {
        return Err(DecodeError::new(
            at,
            "mode",
            format!(
                "type bits {t:#o} are not a file's, a directory's, a link's, a FIFO's, a socket's or a device's"
            ),
        ));
    }
    Ok(Attr {
        ino,
        kind: FileKind::of_mode(mode),
        size,
        blocks,
        mode,
        uid: r.u32("uid")?,
        gid: r.u32("gid")?,
        nlink: r.u32("nlink")?,
        atime_unix_ns: r.u64("atime_unix_ns")?,
        mtime_unix_ns: r.u64("mtime_unix_ns")?,
        ctime_unix_ns: r.u64("ctime_unix_ns")?,
    })
}

/// Writes `f` ([`STATFS_LEN`](super::STATFS_LEN) bytes).
#[inline(always)]
pub(super) fn put_statfs<const N: usize>(w: &mut Writer<N>, f: &StatFsReply) {
    w.u64(f.block_size);
    w.u64(f.blocks);
    w.u64(f.blocks_free);
    w.u64(f.blocks_avail);
    w.u64(f.files);
    w.u64(f.files_free);
    w.u32(f.name_max);
    w.zero::<4>();
    w.u64(f.fs_id);
}

/// Reads a [`StatFsReply`].
pub(super) fn read_statfs(r: &mut Reader<'_>) -> Result<StatFsReply, DecodeError> {
    let f = StatFsReply {
        block_size: r.u64("block_size")?,
        blocks: r.u64("blocks")?,
        blocks_free: r.u64("blocks_free")?,
        blocks_avail: r.u64("blocks_avail")?,
        files: r.u64("files")?,
        files_free: r.u64("files_free")?,
        name_max: r.u32("name_max")?,
        fs_id: 0,
    };
    r.zero::<4>("reserved")?;
    Ok(StatFsReply {
        fs_id: r.u64("fs_id")?,
        ..f
    })
}
