//! Operation codes, and per op what its request and reply carry (flags,
//! fixed-part length, path, payload).

use std::fmt;

use crate::code_enum::code_enum;

use super::{
    ATTR_LEN, FLAG_CREATED, FLAG_DATA, FLAG_DATASYNC, FLAG_ECHO, FLAG_EOF, FLAG_EXCL, FLAG_FORCE,
    FLAG_LINKED, FLAG_NO_DATA, FLAG_PARENT_HERE, FLAG_REPLACED, FLAG_STAMP_ONLY, FLAG_SUBDIR,
    FLAG_SYNC, STATFS_LEN,
};

code_enum! {
    /// Operation codes; the names are those of traces and statistics.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Op: u8 {
        /// Liveness and clock probe.
        Ping = 1 => "ping",
        /// Create a file.
        Create = 2 => "create",
        /// Open / look up a file.
        Open = 3 => "open",
        /// Attributes of a file.
        Stat = 4 => "stat",
        /// Write into one chunk.
        Write = 5 => "write",
        /// Read from one chunk.
        Read = 6 => "read",
        /// Make a file's data durable.
        Fsync = 7 => "fsync",
        /// Set a file's size.
        Truncate = 8 => "truncate",
        /// Remove a file.
        Unlink = 9 => "unlink",
        /// List a directory.
        Readdir = 10 => "readdir",
        /// Server statistics (JSON).
        Stats = 11 => "stats",
        /// Stop the server.
        Shutdown = 12 => "shutdown",
        /// Create a directory record.
        Mkdir = 13 => "mkdir",
        /// One step of removing a directory (mark, commit, unmark, undo).
        Rmdir = 14 => "rmdir",
        /// Whether a path is a directory that takes new entries.
        CheckParent = 15 => "check_parent",
        /// Insert a file record under a new name (the first step of rename, or
        /// a hard link's new name).
        Link = 16 => "link",
        /// Change a record's attributes (or a data object's times).
        Setattr = 17 => "setattr",
        /// The daemon's totals (statvfs of its data directory, its records).
        Statfs = 18 => "statfs",
        /// Create a symbolic link record (its target in the payload).
        Symlink = 19 => "symlink",
        /// A symbolic link's record and target (the target in the payload).
        Readlink = 20 => "readlink",
        /// One step on a file's link count (on its home daemon), or the mark
        /// of a name as one of several (on the name's owner).
        LinkCount = 21 => "link_count",
    }
}

impl Op {
    /// Flags a request of this op may set.
    pub(super) fn request_flags(self) -> u16 {
        match self {
            Op::Create => FLAG_EXCL | FLAG_PARENT_HERE,
            Op::Mkdir | Op::Symlink => FLAG_PARENT_HERE,
            Op::CheckParent => FLAG_SUBDIR | FLAG_STAMP_ONLY,
            Op::Link => FLAG_PARENT_HERE | FLAG_EXCL | FLAG_LINKED,
            Op::Write => FLAG_SYNC,
            Op::Fsync => FLAG_DATASYNC,
            Op::Shutdown => FLAG_FORCE,
            Op::Ping => FLAG_ECHO,
            Op::Unlink => FLAG_DATA | FLAG_PARENT_HERE,
            Op::Stat | Op::Setattr => FLAG_DATA,
            _ => 0,
        }
    }

    /// Flags a successful reply of this op may set (besides `FLAG_REPLY`).
    pub(super) fn reply_flags(self) -> u16 {
        match self {
            Op::Readdir => FLAG_EOF,
            Op::Create => FLAG_CREATED,
            Op::Stat => FLAG_NO_DATA,
            Op::Unlink => FLAG_LINKED | FLAG_NO_DATA,
            Op::Link => FLAG_LINKED | FLAG_REPLACED,
            Op::LinkCount => FLAG_LINKED,
            _ => 0,
        }
    }

    /// Fixed-part length of a request.
    pub(super) fn request_fixed_len(self) -> usize {
        match self {
            Op::Open | Op::Truncate | Op::Unlink | Op::Symlink => 8,
            Op::Write | Op::Readdir | Op::Create | Op::Mkdir | Op::Rmdir => 16,
            Op::LinkCount => 56,
            Op::Read => 24,
            Op::Link | Op::Setattr => 48,
            _ => 0,
        }
    }

    /// Fixed-part length of a successful reply.
    pub(super) fn reply_fixed_len(self) -> usize {
        match self {
            Op::Create
            | Op::Open
            | Op::Stat
            | Op::Mkdir
            | Op::Setattr
            | Op::Symlink
            | Op::Readlink => ATTR_LEN,
            Op::Ping | Op::Write | Op::Unlink | Op::Link => 8,
            Op::LinkCount => 48,
            Op::Readdir => 16,
            Op::Statfs => STATFS_LEN,
            _ => 0,
        }
    }

    /// How a request's variable part is used.
    pub(super) fn request_path(self) -> PathRule {
        match self {
            Op::Ping | Op::Stats | Op::Shutdown | Op::Statfs => PathRule::None,
            Op::Readdir | Op::Stat | Op::CheckParent | Op::Setattr | Op::LinkCount => PathRule::Dir,
            _ => PathRule::File,
        }
    }

    /// Whether a request carries a payload.
    pub(super) fn request_payload(self) -> bool {
        matches!(self, Op::Write | Op::Ping | Op::Symlink | Op::Link)
    }

    /// Whether a successful reply carries a payload.
    pub fn reply_payload(self) -> bool {
        matches!(
            self,
            Op::Ping | Op::Read | Op::Readdir | Op::Stats | Op::Readlink
        )
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PathRule {
    /// No variable part.
    None,
    /// A valid file path.
    File,
    /// A valid path, or empty for the root directory.
    Dir,
}
