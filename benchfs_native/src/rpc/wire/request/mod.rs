//! Requests: what each op asks for ([`RequestOf`] and its steps), and
//! the two directions of their encoding.
//!
//! * `encode`: a request to bytes, its fields checked first;
//! * `decode`: bytes to a request, its fields checked as they are read;
//! * `rules`: the checks both directions share (a link target's length,
//!   a link_count's steps).

mod decode;
mod encode;
mod rules;

pub use decode::{decode_request, decode_request_body};
pub use encode::encode_request;
pub use rules::check_target;
pub(super) use rules::{check_target_payload, target_len_ok};

use super::op::Op;
use super::shared::SharedAttr;
use crate::code_enum::code_enum;

/// A request whose path borrows: decoded from a message, or built by a
/// caller to encode.
pub type Request<'a> = RequestOf<&'a str>;

/// A request that owns its path.
pub type OwnedRequest = RequestOf<Box<str>>;

/// A request, over what holds its path `P`: a [`Request`] borrows it from
/// the message it was decoded from (or the caller's string it is encoded
/// from), an [`OwnedRequest`] owns it (a request the daemon hands to a
/// storage thread, past the message's life). Write data is not part of
/// it: it is the active message's payload, of which `len` is the length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestOf<P> {
    /// Liveness probe; with a payload, a measure of the transport alone
    /// (no storage involved).
    Ping {
        /// Payload length (discarded by the server unless `echo`).
        len: u64,
        /// Send the payload back.
        echo: bool,
    },
    /// Create the file record `path` with permissions `mode`, owned by
    /// `uid`/`gid`.
    Create {
        /// File path.
        path: P,
        /// Permission bits, with the type bits of a FIFO, a socket or a
        /// device node.
        mode: u32,
        /// A device node's number (`st_rdev`); 0 for the others.
        rdev: u32,
        /// Owner.
        uid: u32,
        /// Group.
        gid: u32,
        /// Fail with `EEXIST` if it exists.
        exclusive: bool,
        /// The daemon owns the parent too: check it in the same step.
        parent_here: bool,
    },
    /// Open (look up) `path`; `flags` are Linux `open(2)` flags.
    Open {
        /// File path.
        path: P,
        /// `O_*` flags.
        flags: u32,
    },
    /// Attributes of the record `path` (empty: the root), or of the data
    /// object `path` when `data`.
    Stat {
        /// Path, or a data object's name.
        path: P,
        /// `path` names a data object.
        data: bool,
    },
    /// Write `len` payload bytes at `offset` inside chunk `chunk`.
    Write {
        /// File path.
        path: P,
        /// Chunk index.
        chunk: u64,
        /// Offset inside the chunk.
        offset: u64,
        /// Payload length.
        len: u64,
        /// Durable before the reply.
        sync: bool,
    },
    /// Read up to `len` bytes at `offset` inside chunk `chunk`.
    Read {
        /// File path.
        path: P,
        /// Chunk index.
        chunk: u64,
        /// Offset inside the chunk.
        offset: u64,
        /// Bytes wanted.
        len: u64,
    },
    /// Make `path` durable.
    Fsync {
        /// File path.
        path: P,
        /// Data only.
        datasync: bool,
    },
    /// Set `path`'s size.
    Truncate {
        /// File path.
        path: P,
        /// New size.
        size: u64,
    },
    /// Remove the file record `path` (only if its id is `ino`, unless 0),
    /// or the data object `path` when `data`.
    Unlink {
        /// Path, or a data object's name.
        path: P,
        /// The id the record must have; 0: any.
        ino: u64,
        /// `path` names a data object.
        data: bool,
        /// The receiving daemon also owns the parent's record: it stamps
        /// the parent's times with the removal (`FLAG_PARENT_HERE`).
        parent_here: bool,
    },
    /// List directory `path` (empty: the root) from `cursor` (0: the start).
    Readdir {
        /// Directory path, or empty.
        path: P,
        /// Where to continue (`next_cursor` of the previous reply).
        cursor: u64,
        /// Most entries wanted.
        max_entries: u32,
    },
    /// Server statistics.
    Stats,
    /// Stop the server.
    Shutdown {
        /// Without waiting for in-flight requests.
        force: bool,
    },
    /// Create the directory record `path`.
    Mkdir {
        /// Directory path.
        path: P,
        /// Permission bits.
        mode: u32,
        /// Owner.
        uid: u32,
        /// Group.
        gid: u32,
        /// The daemon owns the parent too: check it in the same step.
        parent_here: bool,
    },
    /// One step of removing directory `path` (docs/NAMESPACE.md).
    Rmdir {
        /// Directory path.
        path: P,
        /// Which step.
        step: RmdirStep,
        /// [`RmdirStep::Undo`]: the id the directory must have.
        ino: u64,
    },
    /// An entry of directory `path` ("" = the root) was added: succeeds
    /// if it is a directory not being removed, and stamps its mtime and
    /// ctime (`stamp_only`: an entry went or was replaced, stamped without
    /// the check).
    CheckParent {
        /// Directory path, or empty.
        path: P,
        /// The entry is a directory: one subdirectory more (less when
        /// `stamp_only`).
        subdir: bool,
        /// Only stamp the times (a removal or a replacement).
        stamp_only: bool,
    },
    /// Insert the file or symbolic link record `record` as `path`,
    /// replacing a file or link there (unless `exclusive`); a link's
    /// target is the payload.
    Link {
        /// The new name.
        path: P,
        /// The record (the renamed file's or link's).
        record: Record,
        /// Payload length: a link's target (0 for a file).
        target_len: u64,
        /// The daemon owns the parent too: check it in the same step.
        parent_here: bool,
        /// `EEXIST` if the name exists (a hard link's new name).
        exclusive: bool,
        /// The record is one of several names of its file.
        linked: bool,
    },
    /// Set the fields of `mask` (`SET_*`) of the record `path`, or the
    /// times of the data object `path` when `data`.
    Setattr {
        /// Path ("" = the root), or a data object's name.
        path: P,
        /// `SET_*` bits.
        mask: u32,
        /// Permission bits.
        mode: u32,
        /// Owner.
        uid: u32,
        /// Group.
        gid: u32,
        /// Size.
        size: u64,
        /// Access time, ns since the Unix epoch.
        atime_unix_ns: u64,
        /// Modification time, ns since the Unix epoch.
        mtime_unix_ns: u64,
        /// `path` names a data object.
        data: bool,
    },
    /// The daemon's totals.
    Statfs,
    /// Create the symbolic link record `path`; its target (`len` bytes of
    /// UTF-8) is the payload.
    Symlink {
        /// The link's path.
        path: P,
        /// Owner.
        uid: u32,
        /// Group.
        gid: u32,
        /// Payload length (the target's).
        len: u64,
        /// The daemon owns the parent too: check it in the same step.
        parent_here: bool,
    },
    /// The record and target of the symbolic link `path`.
    Readlink {
        /// The link's path.
        path: P,
    },
    /// A step on the link count and shared attributes of file `ino` on
    /// its home daemon (`path` empty), the news that its data is written
    /// ([`CountStep::Data`], to its home too), or [`CountStep::Mark`] of
    /// the record `path` with id `ino`.
    LinkCount {
        /// Empty, or the name to mark.
        path: P,
        /// The file's id.
        ino: u64,
        /// Which step.
        step: CountStep,
        /// A [`CountStep::Set`]'s `SET_*` bits (no other step has any).
        mask: u32,
        /// An add's: the source name's attributes (taken in by the first
        /// link); a set's: the values the mask names (ctime 0: the home
        /// stamps it); all zero for the other steps.
        attr: SharedAttr,
    },
}

code_enum! {
    /// The steps of a link_count request.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum CountStep: u32 {
        /// The count (a read).
        Get = 1,
        /// One name more; the count after.
        Add = 2,
        /// One name less; the count after (0: remove the data).
        Drop = 3,
        /// Mark the record `path` as one of several names (on its owner).
        Mark = 4,
        /// A setattr through one of the names: the shared attributes the
        /// mask names; the count and attributes after.
        Set = 5,
        /// An add taken back by a link whose source was gone at its mark:
        /// one name less; the count after (0: remove the data), and no
        /// attributes when the entry went with it (no name was ever marked).
        Undo = 6,
        /// Data is written to the file from now on (a write's or a
        /// truncate's, sent beside it): its home answers stats and unlinks
        /// of the file's record without `NO_DATA`. The count is 0.
        Data = 7,
    }
}

impl CountStep {
    /// Whether the step names a record (`Mark`) rather than a count.
    pub fn names_a_record(self) -> bool {
        self == CountStep::Mark
    }
}

code_enum! {
    /// The steps of a directory removal.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum RmdirStep: u32 {
        /// Mark the directory as being removed (new entries are refused).
        Mark = 1,
        /// Remove the marked directory.
        Commit = 2,
        /// Clear the mark (the directory was not empty).
        Unmark = 3,
        /// Remove a directory this client just made (a failed mkdir).
        Undo = 4,
    }
}

/// A file or symbolic link record as a rename moves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Record {
    /// The file id.
    pub ino: u64,
    /// `st_mode` (a regular file, a symbolic link, a FIFO, a socket or a
    /// device node).
    pub mode: u32,
    /// A device node's number (`st_rdev`); 0 for the others.
    pub rdev: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Access time, ns since the Unix epoch.
    pub atime_unix_ns: u64,
    /// Modification time, ns since the Unix epoch.
    pub mtime_unix_ns: u64,
    /// Status change time, ns since the Unix epoch.
    pub ctime_unix_ns: u64,
}

impl<P: AsRef<str>> RequestOf<P> {
    /// The op.
    pub fn op(&self) -> Op {
        match self {
            RequestOf::Ping { .. } => Op::Ping,
            RequestOf::Create { .. } => Op::Create,
            RequestOf::Open { .. } => Op::Open,
            RequestOf::Stat { .. } => Op::Stat,
            RequestOf::Write { .. } => Op::Write,
            RequestOf::Read { .. } => Op::Read,
            RequestOf::Fsync { .. } => Op::Fsync,
            RequestOf::Truncate { .. } => Op::Truncate,
            RequestOf::Unlink { .. } => Op::Unlink,
            RequestOf::Readdir { .. } => Op::Readdir,
            RequestOf::Stats => Op::Stats,
            RequestOf::Shutdown { .. } => Op::Shutdown,
            RequestOf::Mkdir { .. } => Op::Mkdir,
            RequestOf::Rmdir { .. } => Op::Rmdir,
            RequestOf::CheckParent { .. } => Op::CheckParent,
            RequestOf::Link { .. } => Op::Link,
            RequestOf::Setattr { .. } => Op::Setattr,
            RequestOf::Statfs => Op::Statfs,
            RequestOf::Symlink { .. } => Op::Symlink,
            RequestOf::Readlink { .. } => Op::Readlink,
            RequestOf::LinkCount { .. } => Op::LinkCount,
        }
    }

    /// The path (empty for ops without one).
    pub fn path(&self) -> &str {
        match self {
            RequestOf::Create { path, .. }
            | RequestOf::Open { path, .. }
            | RequestOf::Stat { path, .. }
            | RequestOf::Write { path, .. }
            | RequestOf::Read { path, .. }
            | RequestOf::Fsync { path, .. }
            | RequestOf::Truncate { path, .. }
            | RequestOf::Unlink { path, .. }
            | RequestOf::Readdir { path, .. }
            | RequestOf::Mkdir { path, .. }
            | RequestOf::Rmdir { path, .. }
            | RequestOf::CheckParent { path, .. }
            | RequestOf::Link { path, .. }
            | RequestOf::Setattr { path, .. }
            | RequestOf::Symlink { path, .. }
            | RequestOf::Readlink { path }
            | RequestOf::LinkCount { path, .. } => path.as_ref(),
            RequestOf::Ping { .. }
            | RequestOf::Stats
            | RequestOf::Shutdown { .. }
            | RequestOf::Statfs => "",
        }
    }

    /// The length of the payload the request comes with: write data, a
    /// ping's bytes, a symbolic link's target (0 for the other ops).
    pub fn payload_len(&self) -> u64 {
        match *self {
            RequestOf::Write { len, .. }
            | RequestOf::Ping { len, .. }
            | RequestOf::Symlink { len, .. } => len,
            RequestOf::Link { target_len, .. } => target_len,
            _ => 0,
        }
    }
}

impl Request<'_> {
    /// The same request with its path copied: it outlives the message.
    pub fn to_owned_path(&self) -> OwnedRequest {
        // Each op with a path and its other fields, once: a field left out
        // does not compile (the patterns have no `..`).
        macro_rules! path_copied {
            ($($op:ident { $($field:ident),* }),* ; $($others:tt)*) => {
                match *self {
                    $(RequestOf::$op { path, $($field),* } => {
                        RequestOf::$op { path: Box::from(path), $($field),* }
                    })*
                    $($others)*
                }
            };
        }
        path_copied! {
            Create { mode, rdev, uid, gid, exclusive, parent_here },
            Open { flags },
            Stat { data },
            Write { chunk, offset, len, sync },
            Read { chunk, offset, len },
            Fsync { datasync },
            Truncate { size },
            Unlink { ino, data, parent_here },
            Readdir { cursor, max_entries },
            Mkdir { mode, uid, gid, parent_here },
            Rmdir { step, ino },
            CheckParent { subdir, stamp_only },
            Link { record, target_len, parent_here, exclusive, linked },
            Setattr { mask, mode, uid, gid, size, atime_unix_ns, mtime_unix_ns, data },
            Symlink { uid, gid, len, parent_here },
            Readlink {},
            LinkCount { ino, step, mask, attr };
            RequestOf::Ping { len, echo } => RequestOf::Ping { len, echo },
            RequestOf::Stats => RequestOf::Stats,
            RequestOf::Shutdown { force } => RequestOf::Shutdown { force },
            RequestOf::Statfs => RequestOf::Statfs,
        }
    }
}
