//! The namespace operations of the client (docs/NAMESPACE.md): directories,
//! rename, attribute changes and the cluster's totals.

use super::Client;
use crate::error::{Error, Result};
use crate::rpc::wire::Attr;

/// Attribute changes of [`Client::setattr`]; `None` leaves a field as it
/// is. A time of "now" is resolved by the caller into nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SetAttr {
    /// Permission bits (set-user-ID, set-group-ID and sticky are dropped).
    pub mode: Option<u32>,
    /// Owner.
    pub uid: Option<u32>,
    /// Group.
    pub gid: Option<u32>,
    /// Size (files only).
    pub size: Option<u64>,
    /// Last access, nanoseconds since the Unix epoch.
    pub atime_unix_ns: Option<u64>,
    /// Last modification, nanoseconds since the Unix epoch.
    pub mtime_unix_ns: Option<u64>,
}

/// The cluster's totals (`statvfs`), summed over the daemons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatFs {
    /// Unit of the block counts, bytes.
    pub block_size: u64,
    /// Blocks of the data directories' file systems.
    pub blocks: u64,
    /// Free blocks.
    pub blocks_free: u64,
    /// Free blocks for unprivileged users.
    pub blocks_avail: u64,
    /// Namespace records (files and directories).
    pub files: u64,
    /// Free inodes of the data directories' file systems.
    pub files_free: u64,
    /// Longest name.
    pub name_max: u32,
}

fn not_yet(op: &'static str, path: &str) -> Error {
    Error::os(libc::ENOSYS, op, path)
}

impl Client {
    /// The owner of later creates and mkdirs (default: the process's
    /// effective uid and gid).
    pub fn set_creator(&mut self, uid: u32, gid: u32) {
        self.creator = (uid, gid);
    }

    /// Creates directory `path`: `EEXIST` if the name exists, `ENOENT` /
    /// `ENOTDIR` if its parent is missing / a file.
    pub fn mkdir(&mut self, path: &str, _mode: u32) -> Result<Attr> {
        Err(not_yet("mkdir", path))
    }

    /// Removes the empty directory `path`: `ENOTEMPTY`, `ENOTDIR`, `ENOENT`.
    pub fn rmdir(&mut self, path: &str) -> Result<()> {
        Err(not_yet("rmdir", path))
    }

    /// Renames file `from` to `to` (replacing a file there); a directory
    /// source is refused with `EXDEV`.
    pub fn rename(&mut self, from: &str, _to: &str) -> Result<()> {
        Err(not_yet("rename", from))
    }

    /// Changes the attributes of `path`; returns the new attributes.
    pub fn setattr(&mut self, path: &str, _set: &SetAttr) -> Result<Attr> {
        Err(not_yet("setattr", path))
    }

    /// The cluster's totals.
    pub fn statfs(&mut self) -> Result<StatFs> {
        Err(not_yet("statfs", ""))
    }
}
