//! Requests: what each op asks for, encoded and decoded.

use super::codec::{DecodeError, Reader};
use super::header::{Frame, Header, Route, decode_header, put_frame, var_str};
use super::op::{Op, PathRule};
use super::reply::FileKind;
use super::shared::{SharedAttr, put_shared, read_shared};
use super::{
    FIXED_MAX, FLAG_DATA, FLAG_DATASYNC, FLAG_ECHO, FLAG_EXCL, FLAG_FORCE, FLAG_LINKED,
    FLAG_PARENT_HERE, FLAG_SYNC, HEADER_LEN, Limits, MAX_PATH, MAX_TARGET, SET_ALL,
};
use crate::code_enum::code_enum;
use crate::error::{Error, Result};
use crate::storage::layout;

/// A request. Write data is not part of it: it is the active message's
/// payload, of which `len` is the length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request<'a> {
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
        path: &'a str,
        /// Permission bits.
        mode: u32,
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
        path: &'a str,
        /// `O_*` flags.
        flags: u32,
    },
    /// Attributes of the record `path` (empty: the root), or of the data
    /// object `path` when `data`.
    Stat {
        /// Path, or a data object's name.
        path: &'a str,
        /// `path` names a data object.
        data: bool,
    },
    /// Write `len` payload bytes at `offset` inside chunk `chunk`.
    Write {
        /// File path.
        path: &'a str,
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
        path: &'a str,
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
        path: &'a str,
        /// Data only.
        datasync: bool,
    },
    /// Set `path`'s size.
    Truncate {
        /// File path.
        path: &'a str,
        /// New size.
        size: u64,
    },
    /// Remove the file record `path` (only if its id is `ino`, unless 0),
    /// or the data object `path` when `data`.
    Unlink {
        /// Path, or a data object's name.
        path: &'a str,
        /// The id the record must have; 0: any.
        ino: u64,
        /// `path` names a data object.
        data: bool,
    },
    /// List directory `path` (empty: the root) from `cursor` (0: the start).
    Readdir {
        /// Directory path, or empty.
        path: &'a str,
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
        path: &'a str,
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
        path: &'a str,
        /// Which step.
        step: RmdirStep,
        /// [`RmdirStep::Undo`]: the id the directory must have.
        ino: u64,
    },
    /// Succeeds if `path` ("" = the root) is a directory not being removed.
    CheckParent {
        /// Directory path, or empty.
        path: &'a str,
    },
    /// Insert the file or symbolic link record `record` as `path`,
    /// replacing a file or link there (unless `exclusive`); a link's
    /// target is the payload.
    Link {
        /// The new name.
        path: &'a str,
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
        path: &'a str,
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
        path: &'a str,
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
        path: &'a str,
    },
    /// A step on the link count and shared attributes of file `ino` on
    /// its home daemon (`path` empty), or [`CountStep::Mark`] of the
    /// record `path` with id `ino`.
    LinkCount {
        /// Empty, or the name to mark.
        path: &'a str,
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
    /// `st_mode` (a regular file or a symbolic link).
    pub mode: u32,
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

impl Request<'_> {
    /// The op.
    pub fn op(&self) -> Op {
        match self {
            Request::Ping { .. } => Op::Ping,
            Request::Create { .. } => Op::Create,
            Request::Open { .. } => Op::Open,
            Request::Stat { .. } => Op::Stat,
            Request::Write { .. } => Op::Write,
            Request::Read { .. } => Op::Read,
            Request::Fsync { .. } => Op::Fsync,
            Request::Truncate { .. } => Op::Truncate,
            Request::Unlink { .. } => Op::Unlink,
            Request::Readdir { .. } => Op::Readdir,
            Request::Stats => Op::Stats,
            Request::Shutdown { .. } => Op::Shutdown,
            Request::Mkdir { .. } => Op::Mkdir,
            Request::Rmdir { .. } => Op::Rmdir,
            Request::CheckParent { .. } => Op::CheckParent,
            Request::Link { .. } => Op::Link,
            Request::Setattr { .. } => Op::Setattr,
            Request::Statfs => Op::Statfs,
            Request::Symlink { .. } => Op::Symlink,
            Request::Readlink { .. } => Op::Readlink,
            Request::LinkCount { .. } => Op::LinkCount,
        }
    }

    /// The path (empty for ops without one).
    pub fn path(&self) -> &str {
        match *self {
            Request::Create { path, .. }
            | Request::Open { path, .. }
            | Request::Stat { path, .. }
            | Request::Write { path, .. }
            | Request::Read { path, .. }
            | Request::Fsync { path, .. }
            | Request::Truncate { path, .. }
            | Request::Unlink { path, .. }
            | Request::Readdir { path, .. }
            | Request::Mkdir { path, .. }
            | Request::Rmdir { path, .. }
            | Request::CheckParent { path }
            | Request::Link { path, .. }
            | Request::Setattr { path, .. }
            | Request::Symlink { path, .. }
            | Request::Readlink { path }
            | Request::LinkCount { path, .. } => path,
            Request::Ping { .. } | Request::Stats | Request::Shutdown { .. } | Request::Statfs => {
                ""
            }
        }
    }
}

fn check_path(path: &str, rule: PathRule) -> Result<()> {
    if rule == PathRule::Dir && path.is_empty() {
        return Ok(());
    }
    layout::validate(path)?;
    if path.len() > MAX_PATH {
        return Err(Error::os(libc::ENAMETOOLONG, "encode rpc message", path));
    }
    Ok(())
}

/// Checks a symbolic link's target: not empty (`ENOENT`, as
/// `symlink(2)`), at most [`MAX_TARGET`] bytes (`ENAMETOOLONG`), no NUL
/// (`EINVAL`). The target is kept as given: never resolved or normalized.
pub fn check_target(target: &str) -> Result<()> {
    let errno = if target.is_empty() {
        libc::ENOENT
    } else if target.len() > MAX_TARGET {
        libc::ENAMETOOLONG
    } else if target.contains('\0') {
        libc::EINVAL
    } else {
        return Ok(());
    };
    let shown: String = target.chars().take(64).collect();
    Err(Error::os(
        errno,
        "symlink target",
        format!(
            "{shown:?} ({} bytes, 1 to {MAX_TARGET}, no NUL)",
            target.len()
        ),
    ))
}

/// Whether `len` is a possible target length.
pub(super) fn target_len_ok(len: u64) -> bool {
    (1..=MAX_TARGET as u64).contains(&len)
}

/// A decoder's check of the target length a header's `payload_len` gives.
pub(super) fn check_target_payload(len: u64) -> std::result::Result<(), DecodeError> {
    if target_len_ok(len) {
        return Ok(());
    }
    Err(DecodeError::new(
        32,
        "payload_len",
        format!("a link target of {len} bytes (1 to {MAX_TARGET})"),
    ))
}

/// Puts `mode, uid, gid` (and a zero reserved word) into a fixed part.
fn put_owner(fixed: &mut [u8], mode: u32, uid: u32, gid: u32) {
    fixed[0..4].copy_from_slice(&mode.to_le_bytes());
    fixed[4..8].copy_from_slice(&uid.to_le_bytes());
    fixed[8..12].copy_from_slice(&gid.to_le_bytes());
}

fn read_owner(r: &mut Reader<'_>) -> Result<(u32, u32, u32), DecodeError> {
    let mode = r.u32("mode")?;
    let uid = r.u32("uid")?;
    let gid = r.u32("gid")?;
    r.zero::<4>("reserved")?;
    Ok((mode, uid, gid))
}

/// Appends the encoding of `request` (routed by `route`) to `out` and
/// returns the number of bytes appended. The path is validated
/// (relative, no `.`/`..`/empty components, at most [`MAX_PATH`] bytes).
pub fn encode_request(out: &mut Vec<u8>, route: Route, request: &Request<'_>) -> Result<usize> {
    let op = request.op();
    let path = request.path();
    match op.request_path() {
        PathRule::None => {}
        rule => check_path(path, rule)?,
    }
    if let Request::Write { offset, len, .. } | Request::Read { offset, len, .. } = *request
        && offset.checked_add(len).is_none()
    {
        return Err(Error::invalid(
            "offset",
            format!("{op} {path}: offset {offset} + length {len} overflows"),
        ));
    }
    let mut fixed = [0u8; FIXED_MAX];
    let mut flags = 0;
    let mut payload_len = 0;
    let fixed_len = op.request_fixed_len();
    match *request {
        Request::Create {
            mode,
            uid,
            gid,
            exclusive,
            parent_here,
            ..
        } => {
            put_owner(&mut fixed, mode, uid, gid);
            if exclusive {
                flags |= FLAG_EXCL;
            }
            if parent_here {
                flags |= FLAG_PARENT_HERE;
            }
        }
        Request::Mkdir {
            mode,
            uid,
            gid,
            parent_here,
            ..
        } => {
            put_owner(&mut fixed, mode, uid, gid);
            if parent_here {
                flags |= FLAG_PARENT_HERE;
            }
        }
        Request::Stat { data, .. } => {
            if data {
                flags |= FLAG_DATA;
            }
        }
        Request::Unlink { ino, data, .. } => {
            fixed[0..8].copy_from_slice(&ino.to_le_bytes());
            if data {
                flags |= FLAG_DATA;
            }
        }
        Request::Rmdir { step, ino, .. } => {
            fixed[0..4].copy_from_slice(&step.code().to_le_bytes());
            fixed[8..16].copy_from_slice(&ino.to_le_bytes());
        }
        Request::Link {
            record: r,
            target_len,
            parent_here,
            exclusive,
            linked,
            ..
        } => {
            if parent_here {
                flags |= FLAG_PARENT_HERE;
            }
            if exclusive {
                flags |= FLAG_EXCL;
            }
            if linked {
                flags |= FLAG_LINKED;
            }
            let kind = FileKind::of_mode(r.mode);
            let t = r.mode & libc::S_IFMT;
            if !(t == libc::S_IFREG && target_len == 0
                || t == libc::S_IFLNK && target_len_ok(target_len))
            {
                return Err(Error::invalid(
                    "mode",
                    format!(
                        "link {path}: a file record without a target or a link record with one, \
                         got a {} with {target_len} target bytes",
                        kind.name()
                    ),
                ));
            }
            payload_len = target_len;
            fixed[0..8].copy_from_slice(&r.ino.to_le_bytes());
            fixed[8..12].copy_from_slice(&r.mode.to_le_bytes());
            fixed[12..16].copy_from_slice(&r.uid.to_le_bytes());
            fixed[16..20].copy_from_slice(&r.gid.to_le_bytes());
            fixed[24..32].copy_from_slice(&r.atime_unix_ns.to_le_bytes());
            fixed[32..40].copy_from_slice(&r.mtime_unix_ns.to_le_bytes());
            fixed[40..48].copy_from_slice(&r.ctime_unix_ns.to_le_bytes());
        }
        Request::Setattr {
            mask,
            mode,
            uid,
            gid,
            size,
            atime_unix_ns,
            mtime_unix_ns,
            data,
            ..
        } => {
            if mask & !SET_ALL != 0 {
                return Err(Error::invalid(
                    "mask",
                    format!("setattr {path}: unknown bits {:#x}", mask & !SET_ALL),
                ));
            }
            fixed[0..4].copy_from_slice(&mask.to_le_bytes());
            fixed[4..8].copy_from_slice(&mode.to_le_bytes());
            fixed[8..12].copy_from_slice(&uid.to_le_bytes());
            fixed[12..16].copy_from_slice(&gid.to_le_bytes());
            fixed[16..24].copy_from_slice(&size.to_le_bytes());
            fixed[24..32].copy_from_slice(&atime_unix_ns.to_le_bytes());
            fixed[32..40].copy_from_slice(&mtime_unix_ns.to_le_bytes());
            if data {
                flags |= FLAG_DATA;
            }
        }
        Request::Open { flags: f, .. } => fixed[0..4].copy_from_slice(&f.to_le_bytes()),
        Request::Write {
            chunk,
            offset,
            len,
            sync,
            ..
        } => {
            fixed[0..8].copy_from_slice(&chunk.to_le_bytes());
            fixed[8..16].copy_from_slice(&offset.to_le_bytes());
            payload_len = len;
            if sync {
                flags |= FLAG_SYNC;
            }
        }
        Request::Read {
            chunk, offset, len, ..
        } => {
            fixed[0..8].copy_from_slice(&chunk.to_le_bytes());
            fixed[8..16].copy_from_slice(&offset.to_le_bytes());
            fixed[16..24].copy_from_slice(&len.to_le_bytes());
        }
        Request::Fsync { datasync, .. } => {
            if datasync {
                flags |= FLAG_DATASYNC;
            }
        }
        Request::Truncate { size, .. } => fixed[0..8].copy_from_slice(&size.to_le_bytes()),
        Request::Readdir {
            cursor,
            max_entries,
            ..
        } => {
            fixed[0..8].copy_from_slice(&cursor.to_le_bytes());
            fixed[8..12].copy_from_slice(&max_entries.to_le_bytes());
        }
        Request::Shutdown { force } => {
            if force {
                flags |= FLAG_FORCE;
            }
        }
        Request::Ping { len, echo } => {
            payload_len = len;
            if echo {
                flags |= FLAG_ECHO;
            }
        }
        Request::Symlink {
            uid,
            gid,
            len,
            parent_here,
            ..
        } => {
            if !target_len_ok(len) {
                return Err(Error::os(
                    libc::ENAMETOOLONG,
                    "encode rpc message",
                    format!("symlink {path}: a target of {len} bytes (1 to {MAX_TARGET})"),
                ));
            }
            fixed[0..4].copy_from_slice(&uid.to_le_bytes());
            fixed[4..8].copy_from_slice(&gid.to_le_bytes());
            payload_len = len;
            if parent_here {
                flags |= FLAG_PARENT_HERE;
            }
        }
        Request::LinkCount {
            ino,
            step,
            mask,
            attr,
            ..
        } => {
            if let Err(why) = check_link_count(step, path, ino, mask, &attr) {
                return Err(Error::invalid(
                    "link_count",
                    format!("link_count {step:?} of {ino:#x} (path {path:?}): {why}"),
                ));
            }
            fixed[0..8].copy_from_slice(&ino.to_le_bytes());
            fixed[8..12].copy_from_slice(&step.code().to_le_bytes());
            fixed[12..16].copy_from_slice(&mask.to_le_bytes());
            put_shared(&mut fixed[16..], &attr);
        }
        Request::Stats
        | Request::CheckParent { .. }
        | Request::Statfs
        | Request::Readlink { .. } => {}
    }
    let var = if op.request_path() == PathRule::None {
        &[][..]
    } else {
        path.as_bytes()
    };
    let frame = Frame {
        op,
        flags,
        route,
        status: 0,
        payload_len,
        var,
    };
    let before = out.len();
    put_frame(out, &frame, &fixed[..fixed_len]);
    Ok(out.len() - before)
}

fn decode_path<'a>(buf: &'a [u8], h: &Header, rule: PathRule) -> Result<&'a str, DecodeError> {
    let at = HEADER_LEN + usize::from(h.fixed_len);
    let path = var_str(buf, h, "path")?;
    if rule == PathRule::Dir && path.is_empty() {
        return Ok(path);
    }
    match layout::validate(path) {
        Ok(()) => Ok(path),
        Err(Error::InvalidPath { reason, .. }) => Err(DecodeError::new(at, "path", reason)),
        Err(e) => Err(DecodeError::new(at, "path", e.to_string())),
    }
}

/// Decodes a request message (the active message header) checked against
/// `limits`. The returned request borrows its path from `buf`.
pub fn decode_request<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<(Header, Request<'a>), DecodeError> {
    let h = decode_header(buf, limits)?;
    Ok((h, decode_request_body(buf, &h, limits)?))
}

/// Decodes the body of a request whose header `h` was decoded from `buf`
/// already (the server reads the header first to check the channel).
pub fn decode_request_body<'a>(
    buf: &'a [u8],
    h: &Header,
    limits: &Limits,
) -> Result<Request<'a>, DecodeError> {
    let h = *h;
    if h.is_reply() {
        return Err(DecodeError::new(
            8,
            "flags",
            "expected a request, got a reply",
        ));
    }
    let op = h.op;
    let path = match op.request_path() {
        PathRule::None => "",
        rule => decode_path(buf, &h, rule)?,
    };
    let mut r = Reader {
        buf,
        pos: HEADER_LEN,
    };
    let req = match op {
        Op::Ping => Request::Ping {
            len: h.payload_len,
            echo: h.flags & FLAG_ECHO != 0,
        },
        Op::Create => {
            let (mode, uid, gid) = read_owner(&mut r)?;
            Request::Create {
                path,
                mode,
                uid,
                gid,
                exclusive: h.flags & FLAG_EXCL != 0,
                parent_here: h.flags & FLAG_PARENT_HERE != 0,
            }
        }
        Op::Mkdir => {
            let (mode, uid, gid) = read_owner(&mut r)?;
            Request::Mkdir {
                path,
                mode,
                uid,
                gid,
                parent_here: h.flags & FLAG_PARENT_HERE != 0,
            }
        }
        Op::Rmdir => {
            let at = r.pos;
            let code = r.u32("step")?;
            let step = RmdirStep::from_code(code)
                .ok_or_else(|| DecodeError::new(at, "step", format!("unknown step {code}")))?;
            r.zero::<4>("reserved")?;
            Request::Rmdir {
                path,
                step,
                ino: r.u64("ino")?,
            }
        }
        Op::CheckParent => Request::CheckParent { path },
        Op::Link => {
            let ino = r.u64("ino")?;
            let at = r.pos;
            let mode = r.u32("mode")?;
            match mode & libc::S_IFMT {
                libc::S_IFREG if h.payload_len == 0 => {}
                libc::S_IFLNK if target_len_ok(h.payload_len) => {}
                libc::S_IFREG | libc::S_IFLNK => {
                    return Err(DecodeError::new(
                        32,
                        "payload_len",
                        format!(
                            "{} target bytes for this mode (a file: 0, a link: 1 to {MAX_TARGET})",
                            h.payload_len
                        ),
                    ));
                }
                _ => {
                    return Err(DecodeError::new(
                        at,
                        "mode",
                        "not a regular file's or a symbolic link's mode",
                    ));
                }
            }
            let uid = r.u32("uid")?;
            let gid = r.u32("gid")?;
            r.zero::<4>("reserved")?;
            let record = Record {
                ino,
                mode,
                uid,
                gid,
                atime_unix_ns: r.u64("atime_unix_ns")?,
                mtime_unix_ns: r.u64("mtime_unix_ns")?,
                ctime_unix_ns: r.u64("ctime_unix_ns")?,
            };
            Request::Link {
                path,
                record,
                target_len: h.payload_len,
                parent_here: h.flags & FLAG_PARENT_HERE != 0,
                exclusive: h.flags & FLAG_EXCL != 0,
                linked: h.flags & FLAG_LINKED != 0,
            }
        }
        Op::Setattr => {
            let at = r.pos;
            let mask = r.u32("mask")?;
            if mask & !SET_ALL != 0 {
                return Err(DecodeError::new(
                    at,
                    "mask",
                    format!("unknown bits {:#x}", mask & !SET_ALL),
                ));
            }
            let mode = r.u32("mode")?;
            let uid = r.u32("uid")?;
            let gid = r.u32("gid")?;
            let size = r.u64("size")?;
            let atime_unix_ns = r.u64("atime_unix_ns")?;
            let mtime_unix_ns = r.u64("mtime_unix_ns")?;
            r.zero::<8>("reserved")?;
            Request::Setattr {
                path,
                mask,
                mode,
                uid,
                gid,
                size,
                atime_unix_ns,
                mtime_unix_ns,
                data: h.flags & FLAG_DATA != 0,
            }
        }
        Op::Statfs => Request::Statfs,
        Op::Symlink => {
            let uid = r.u32("uid")?;
            let gid = r.u32("gid")?;
            check_target_payload(h.payload_len)?;
            Request::Symlink {
                path,
                uid,
                gid,
                len: h.payload_len,
                parent_here: h.flags & FLAG_PARENT_HERE != 0,
            }
        }
        Op::Readlink => Request::Readlink { path },
        Op::LinkCount => {
            let ino_at = r.pos;
            let ino = r.u64("ino")?;
            let at = r.pos;
            let code = r.u32("step")?;
            let step = CountStep::from_code(code)
                .ok_or_else(|| DecodeError::new(at, "step", format!("unknown step {code}")))?;
            let mask = r.u32("mask")?;
            let attr = read_shared(&mut r)?;
            if let Err(why) = check_link_count(step, path, ino, mask, &attr) {
                let (at, field) = match why {
                    LinkCountFault::Ino => (ino_at, "ino"),
                    LinkCountFault::Path => (HEADER_LEN + 56, "path"),
                    LinkCountFault::Mask => (HEADER_LEN + 12, "mask"),
                    LinkCountFault::Attr => (HEADER_LEN + 16, "attr"),
                };
                return Err(DecodeError::new(at, field, why.to_string()));
            }
            Request::LinkCount {
                path,
                ino,
                step,
                mask,
                attr,
            }
        }
        Op::Open => {
            let flags = r.u32("open_flags")?;
            r.zero::<4>("reserved")?;
            Request::Open { path, flags }
        }
        Op::Stat => Request::Stat {
            path,
            data: h.flags & FLAG_DATA != 0,
        },
        Op::Write => {
            let chunk = r.u64("chunk")?;
            let at = r.pos;
            let offset = r.u64("offset")?;
            if offset.checked_add(h.payload_len).is_none() {
                return Err(DecodeError::new(
                    at,
                    "offset",
                    "offset + payload_len overflows",
                ));
            }
            Request::Write {
                path,
                chunk,
                offset,
                len: h.payload_len,
                sync: h.flags & FLAG_SYNC != 0,
            }
        }
        Op::Read => {
            let chunk = r.u64("chunk")?;
            let offset = r.u64("offset")?;
            let at = r.pos;
            let len = r.u64("length")?;
            if len > limits.max_payload {
                return Err(DecodeError::new(
                    at,
                    "length",
                    format!("{len} bytes exceed the limit of {}", limits.max_payload),
                ));
            }
            if offset.checked_add(len).is_none() {
                return Err(DecodeError::new(at, "length", "offset + length overflows"));
            }
            Request::Read {
                path,
                chunk,
                offset,
                len,
            }
        }
        Op::Fsync => Request::Fsync {
            path,
            datasync: h.flags & FLAG_DATASYNC != 0,
        },
        Op::Truncate => Request::Truncate {
            path,
            size: r.u64("size")?,
        },
        Op::Unlink => Request::Unlink {
            path,
            ino: r.u64("ino")?,
            data: h.flags & FLAG_DATA != 0,
        },
        Op::Readdir => {
            let cursor = r.u64("cursor")?;
            let at = r.pos;
            let max_entries = r.u32("max_entries")?;
            r.zero::<4>("reserved")?;
            if max_entries > limits.max_dir_entries {
                return Err(DecodeError::new(
                    at,
                    "max_entries",
                    format!(
                        "{max_entries} exceeds the limit of {}",
                        limits.max_dir_entries
                    ),
                ));
            }
            Request::Readdir {
                path,
                cursor,
                max_entries,
            }
        }
        Op::Stats => Request::Stats,
        Op::Shutdown => Request::Shutdown {
            force: h.flags & FLAG_FORCE != 0,
        },
    };
    Ok(req)
}

/// What makes a link_count request malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LinkCountFault {
    Ino,
    Path,
    Mask,
    Attr,
}

impl std::fmt::Display for LinkCountFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LinkCountFault::Ino => "a file id is never 0",
            LinkCountFault::Path => "a mark names a record, a count step none",
            LinkCountFault::Mask => "only a set has a mask, of SET_* bits, not empty",
            LinkCountFault::Attr => {
                "attributes belong to an add, and a set's ctime is 0 (the home stamps it)"
            }
        })
    }
}

/// The rules of a link_count request, both ways: a non-zero id; a path
/// for a mark only; a mask (known bits, not empty) for a set only;
/// attributes for an add or a set only, a set's without ctime.
fn check_link_count(
    step: CountStep,
    path: &str,
    ino: u64,
    mask: u32,
    attr: &SharedAttr,
) -> std::result::Result<(), LinkCountFault> {
    if ino == 0 {
        return Err(LinkCountFault::Ino);
    }
    if step.names_a_record() == path.is_empty() {
        return Err(LinkCountFault::Path);
    }
    let is_set = step == CountStep::Set;
    if is_set != (mask != 0) || mask & !SET_ALL != 0 {
        return Err(LinkCountFault::Mask);
    }
    let attr_ok = match step {
        CountStep::Add => true,
        CountStep::Set => attr.ctime_unix_ns == 0,
        _ => *attr == SharedAttr::default(),
    };
    if !attr_ok {
        return Err(LinkCountFault::Attr);
    }
    Ok(())
}
