//! Replies: each op's answer, or an error with its errno, encoded and
//! decoded.

use super::codec::{DecodeError, Reader};
use super::dir_entry::DIR_ENTRY_FIXED;
use super::header::{Frame, Header, Route, decode_header, put_frame, var_str};
use super::op::Op;
use super::request::{check_target_payload, target_len_ok};
use super::shared::{SharedAttr, put_shared, read_shared};
use super::{
    FIXED_MAX, FLAG_CREATED, FLAG_EOF, FLAG_LINKED, FLAG_REPLACED, FLAG_REPLY, HEADER_LEN, Limits,
    MAX_ERRNO, MAX_PATH, MAX_TARGET,
};
use crate::error::{Error, Result};

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
}

impl FileKind {
    /// The kind an `st_mode` names (`S_IFDIR`: a directory, `S_IFLNK`: a
    /// symbolic link, else a file).
    pub fn of_mode(mode: u32) -> FileKind {
        match mode & libc::S_IFMT {
            libc::S_IFDIR => FileKind::Dir,
            libc::S_IFLNK => FileKind::Symlink,
            _ => FileKind::File,
        }
    }

    /// The `S_IF*` type bits.
    pub fn type_bits(self) -> u32 {
        match self {
            FileKind::File => libc::S_IFREG,
            FileKind::Dir => libc::S_IFDIR,
            FileKind::Symlink => libc::S_IFLNK,
        }
    }

    /// Lower-case name (`file`, `dir`, `symlink`).
    pub fn name(self) -> &'static str {
        match self {
            FileKind::File => "file",
            FileKind::Dir => "dir",
            FileKind::Symlink => "symlink",
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
    /// Size in bytes (a symbolic link's: its target's length).
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
}

/// A reply. Read data, readdir entries and the stats JSON are the active
/// message's payload, of which the length is given here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply<'a> {
    /// Ping answered; the server's clock.
    Ping {
        /// Server time, nanoseconds since the Unix epoch.
        time_unix_ns: u64,
        /// Payload length (the echoed bytes; 0 without echo).
        len: u64,
    },
    /// Created (or found, by a non-exclusive create).
    Create {
        /// The record's attributes.
        attr: Attr,
        /// Made by this request.
        created: bool,
    },
    /// Opened.
    Open(Attr),
    /// Attributes.
    Stat(Attr),
    /// Written.
    Write {
        /// Bytes written.
        written: u64,
    },
    /// Read: `len` payload bytes follow (short at end of file).
    Read {
        /// Payload length.
        len: u64,
    },
    /// Synced.
    Fsync,
    /// Truncated.
    Truncate,
    /// Removed: the id of the removed record (0 for a data object or a
    /// symbolic link: no data to remove, unless `linked`).
    Unlink {
        /// The removed file's id.
        ino: u64,
        /// The name was one of several: drop the count, not the data.
        linked: bool,
    },
    /// Directory entries: `count` entries, `entries_len` payload bytes
    /// (see [`encode_dir_entries`](super::encode_dir_entries)).
    Readdir {
        /// Entries in the payload.
        count: u32,
        /// Cursor for the next readdir.
        next_cursor: u64,
        /// No more entries.
        eof: bool,
        /// Payload length.
        entries_len: u64,
    },
    /// Statistics: `json_len` payload bytes of UTF-8 JSON.
    Stats {
        /// Payload length.
        json_len: u64,
    },
    /// Shutting down.
    Shutdown,
    /// Directory created.
    Mkdir(Attr),
    /// Removal step done.
    Rmdir,
    /// The path takes new entries.
    CheckParent,
    /// Linked: the id of the file it replaced (0: none, or a symbolic
    /// link, which has no data), and whether a name was replaced at all.
    Link {
        /// The replaced file's id (the inserted record's own: the name
        /// was already one of the same file, left as it was).
        replaced: u64,
        /// The replaced name was one of several: drop the count.
        linked: bool,
        /// A name was there (`FLAG_REPLACED`): set whenever `replaced` is
        /// not 0 or `linked` is, and for a replaced symbolic link.
        name_replaced: bool,
    },
    /// A link count step done: the count after it (a mark: 0), and the
    /// attributes the file's names share when its home keeps them
    /// (`FLAG_LINKED`; `None`: one name, whose record has them).
    LinkCount {
        /// The count.
        count: u64,
        /// The shared attributes.
        attr: Option<SharedAttr>,
    },
    /// Attributes set: the new ones.
    Setattr(Attr),
    /// The daemon's totals.
    Statfs(StatFsReply),
    /// Symbolic link created.
    Symlink(Attr),
    /// A symbolic link's record; `len` payload bytes of its target follow.
    Readlink {
        /// The link's attributes.
        attr: Attr,
        /// Payload length (the target's).
        len: u64,
    },
    /// The operation failed with `errno`; `message` says why.
    Error {
        /// The failed op.
        op: Op,
        /// Positive errno (1..=4095).
        errno: i32,
        /// Human-readable detail (may be empty).
        message: &'a str,
    },
}

impl Reply<'_> {
    /// The op this replies to.
    pub fn op(&self) -> Op {
        match self {
            Reply::Ping { .. } => Op::Ping,
            Reply::Create { .. } => Op::Create,
            Reply::Open(_) => Op::Open,
            Reply::Stat(_) => Op::Stat,
            Reply::Write { .. } => Op::Write,
            Reply::Read { .. } => Op::Read,
            Reply::Fsync => Op::Fsync,
            Reply::Truncate => Op::Truncate,
            Reply::Unlink { .. } => Op::Unlink,
            Reply::Mkdir(_) => Op::Mkdir,
            Reply::Rmdir => Op::Rmdir,
            Reply::CheckParent => Op::CheckParent,
            Reply::Link { .. } => Op::Link,
            Reply::Setattr(_) => Op::Setattr,
            Reply::Statfs(_) => Op::Statfs,
            Reply::Symlink(_) => Op::Symlink,
            Reply::Readlink { .. } => Op::Readlink,
            Reply::LinkCount { .. } => Op::LinkCount,
            Reply::Readdir { .. } => Op::Readdir,
            Reply::Stats { .. } => Op::Stats,
            Reply::Shutdown => Op::Shutdown,
            Reply::Error { op, .. } => *op,
        }
    }
}

/// Encodes `a` into the first [`ATTR_LEN`] bytes of `fixed`: `ino, size,
/// blocks: u64; mode, uid, gid, nlink: u32; atime, mtime, ctime: u64`. The
/// type bits of `mode` are those of `a.kind`.
fn put_attr(fixed: &mut [u8], a: &Attr) {
    let mode = (a.mode & !libc::S_IFMT) | a.kind.type_bits();
    fixed[0..8].copy_from_slice(&a.ino.to_le_bytes());
    fixed[8..16].copy_from_slice(&a.size.to_le_bytes());
    fixed[16..24].copy_from_slice(&a.blocks.to_le_bytes());
    fixed[24..28].copy_from_slice(&mode.to_le_bytes());
    fixed[28..32].copy_from_slice(&a.uid.to_le_bytes());
    fixed[32..36].copy_from_slice(&a.gid.to_le_bytes());
    fixed[36..40].copy_from_slice(&a.nlink.to_le_bytes());
    fixed[40..48].copy_from_slice(&a.atime_unix_ns.to_le_bytes());
    fixed[48..56].copy_from_slice(&a.mtime_unix_ns.to_le_bytes());
    fixed[56..64].copy_from_slice(&a.ctime_unix_ns.to_le_bytes());
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char
/// boundary.
fn truncate_str(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Appends the encoding of `reply` (to `route.request_id`, from
/// `route.node`, on `route.channel`) to `out` and returns the number of bytes appended. An error
/// message longer than [`MAX_PATH`] bytes is cut; an errno outside
/// `1..=4095` is an error.
pub fn encode_reply(out: &mut Vec<u8>, route: Route, reply: &Reply<'_>) -> Result<usize> {
    let op = reply.op();
    let mut fixed = [0u8; FIXED_MAX];
    let mut flags = FLAG_REPLY;
    let mut payload_len = 0;
    let mut status = 0;
    let mut var: &[u8] = &[];
    let mut fixed_len = op.reply_fixed_len();
    match *reply {
        Reply::Ping { time_unix_ns, len } => {
            fixed[0..8].copy_from_slice(&time_unix_ns.to_le_bytes());
            payload_len = len;
        }
        Reply::Create { attr, created } => {
            put_attr(&mut fixed, &attr);
            if created {
                flags |= FLAG_CREATED;
            }
        }
        Reply::Open(a)
        | Reply::Stat(a)
        | Reply::Mkdir(a)
        | Reply::Setattr(a)
        | Reply::Symlink(a) => put_attr(&mut fixed, &a),
        Reply::Readlink { attr, len } => {
            if attr.kind != FileKind::Symlink {
                return Err(Error::invalid(
                    "mode",
                    "a readlink reply carries a symbolic link's attributes",
                ));
            }
            if !target_len_ok(len) {
                return Err(Error::invalid(
                    "len",
                    format!("a link target of {len} bytes (1 to {MAX_TARGET})"),
                ));
            }
            put_attr(&mut fixed, &attr);
            payload_len = len;
        }
        Reply::Unlink { ino: v, linked } => {
            fixed[0..8].copy_from_slice(&v.to_le_bytes());
            if linked {
                flags |= FLAG_LINKED;
            }
        }
        Reply::Link {
            replaced,
            linked,
            name_replaced,
        } => {
            if !name_replaced && (replaced != 0 || linked) {
                return Err(Error::invalid(
                    "name_replaced",
                    "a link reply naming a replaced id or a linked name replaced a name",
                ));
            }
            fixed[0..8].copy_from_slice(&replaced.to_le_bytes());
            if linked {
                flags |= FLAG_LINKED;
            }
            if name_replaced {
                flags |= FLAG_REPLACED;
            }
        }
        Reply::LinkCount { count, attr } => {
            fixed[0..8].copy_from_slice(&count.to_le_bytes());
            if let Some(a) = attr {
                put_shared(&mut fixed[8..], &a);
                flags |= FLAG_LINKED;
            }
        }
        Reply::Statfs(f) => {
            fixed[0..8].copy_from_slice(&f.block_size.to_le_bytes());
            fixed[8..16].copy_from_slice(&f.blocks.to_le_bytes());
            fixed[16..24].copy_from_slice(&f.blocks_free.to_le_bytes());
            fixed[24..32].copy_from_slice(&f.blocks_avail.to_le_bytes());
            fixed[32..40].copy_from_slice(&f.files.to_le_bytes());
            fixed[40..48].copy_from_slice(&f.files_free.to_le_bytes());
            fixed[48..52].copy_from_slice(&f.name_max.to_le_bytes());
        }
        Reply::Write { written } => fixed[0..8].copy_from_slice(&written.to_le_bytes()),
        Reply::Read { len } => payload_len = len,
        Reply::Readdir {
            count,
            next_cursor,
            eof,
            entries_len,
        } => {
            fixed[0..4].copy_from_slice(&count.to_le_bytes());
            fixed[8..16].copy_from_slice(&next_cursor.to_le_bytes());
            if eof {
                flags |= FLAG_EOF;
            }
            payload_len = entries_len;
        }
        Reply::Stats { json_len } => payload_len = json_len,
        Reply::Fsync | Reply::Truncate | Reply::Shutdown | Reply::Rmdir | Reply::CheckParent => {}
        Reply::Error { errno, message, .. } => {
            if !(1..=MAX_ERRNO).contains(&errno) {
                return Err(Error::invalid(
                    "errno",
                    format!("must be between 1 and {MAX_ERRNO}, got {errno}"),
                ));
            }
            status = errno;
            var = truncate_str(message, MAX_PATH).as_bytes();
            fixed_len = 0;
        }
    }
    let frame = Frame {
        op,
        flags,
        route,
        status,
        payload_len,
        var,
    };
    let before = out.len();
    put_frame(out, &frame, &fixed[..fixed_len]);
    Ok(out.len() - before)
}

fn read_attr(r: &mut Reader<'_>) -> Result<Attr, DecodeError> {
    let ino = r.u64("ino")?;
    let size = r.u64("size")?;
    let blocks = r.u64("blocks")?;
    let at = r.pos;
    let mode = r.u32("mode")?;
    let t = mode & libc::S_IFMT;
    if t != libc::S_IFREG && t != libc::S_IFDIR && t != libc::S_IFLNK {
        return Err(DecodeError::new(
            at,
            "mode",
            format!("type bits {t:#o} are not a file's, a directory's or a symbolic link's"),
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

/// Decodes a reply message checked against `limits`. An error reply
/// decodes to [`Reply::Error`], its text borrowed from `buf`.
pub fn decode_reply<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<(Header, Reply<'a>), DecodeError> {
    let h = decode_header(buf, limits)?;
    Ok((h, decode_reply_body(buf, &h, limits)?))
}

/// Decodes the body of a reply whose header `h` was decoded from `buf`
/// already (a receiver that reads the header first to route the reply
/// does not decode it twice).
pub fn decode_reply_body<'a>(
    buf: &'a [u8],
    h: &Header,
    limits: &Limits,
) -> Result<Reply<'a>, DecodeError> {
    let h = *h;
    if !h.is_reply() {
        return Err(DecodeError::new(
            8,
            "flags",
            "expected a reply, got a request",
        ));
    }
    if h.status != 0 {
        let message = var_str(buf, &h, "message")?;
        return Ok(Reply::Error {
            op: h.op,
            errno: h.status,
            message,
        });
    }
    let mut r = Reader {
        buf,
        pos: HEADER_LEN,
    };
    let reply = match h.op {
        Op::Ping => Reply::Ping {
            time_unix_ns: r.u64("time_unix_ns")?,
            len: h.payload_len,
        },
        Op::Create => Reply::Create {
            attr: read_attr(&mut r)?,
            created: h.flags & FLAG_CREATED != 0,
        },
        Op::Open => Reply::Open(read_attr(&mut r)?),
        Op::Stat => Reply::Stat(read_attr(&mut r)?),
        Op::Write => Reply::Write {
            written: r.u64("written")?,
        },
        Op::Read => Reply::Read { len: h.payload_len },
        Op::Fsync => Reply::Fsync,
        Op::Truncate => Reply::Truncate,
        Op::Unlink => Reply::Unlink {
            ino: r.u64("ino")?,
            linked: h.flags & FLAG_LINKED != 0,
        },
        Op::LinkCount => {
            let count = r.u64("count")?;
            let at = r.pos;
            let attr = read_shared(&mut r)?;
            let attr = if h.flags & FLAG_LINKED != 0 {
                Some(attr)
            } else if attr == SharedAttr::default() {
                None
            } else {
                return Err(DecodeError::new(
                    at,
                    "attr",
                    "shared attributes without FLAG_LINKED",
                ));
            };
            Reply::LinkCount { count, attr }
        }
        Op::Mkdir => Reply::Mkdir(read_attr(&mut r)?),
        Op::Setattr => Reply::Setattr(read_attr(&mut r)?),
        Op::Rmdir => Reply::Rmdir,
        Op::CheckParent => Reply::CheckParent,
        Op::Link => {
            let replaced = r.u64("replaced")?;
            let linked = h.flags & FLAG_LINKED != 0;
            let name_replaced = h.flags & FLAG_REPLACED != 0;
            if !name_replaced && (replaced != 0 || linked) {
                return Err(DecodeError::new(
                    8,
                    "flags",
                    "a link reply naming a replaced id or a linked name lacks FLAG_REPLACED",
                ));
            }
            Reply::Link {
                replaced,
                linked,
                name_replaced,
            }
        }
        Op::Statfs => {
            let f = StatFsReply {
                block_size: r.u64("block_size")?,
                blocks: r.u64("blocks")?,
                blocks_free: r.u64("blocks_free")?,
                blocks_avail: r.u64("blocks_avail")?,
                files: r.u64("files")?,
                files_free: r.u64("files_free")?,
                name_max: r.u32("name_max")?,
            };
            r.zero::<4>("reserved")?;
            Reply::Statfs(f)
        }
        Op::Readdir => {
            let count = r.u32("count")?;
            r.zero::<4>("reserved")?;
            let next_cursor = r.u64("next_cursor")?;
            if count > limits.max_dir_entries {
                return Err(DecodeError::new(
                    HEADER_LEN,
                    "count",
                    format!("{count} exceeds the limit of {}", limits.max_dir_entries),
                ));
            }
            let min_payload = u64::from(count) * DIR_ENTRY_FIXED as u64;
            if h.payload_len < min_payload {
                return Err(DecodeError::new(
                    32,
                    "payload_len",
                    format!(
                        "{count} entries need at least {min_payload} payload bytes, header says {}",
                        h.payload_len
                    ),
                ));
            }
            Reply::Readdir {
                count,
                next_cursor,
                eof: h.flags & FLAG_EOF != 0,
                entries_len: h.payload_len,
            }
        }
        Op::Stats => Reply::Stats {
            json_len: h.payload_len,
        },
        Op::Symlink => Reply::Symlink(read_attr(&mut r)?),
        Op::Readlink => {
            let at = r.pos;
            let attr = read_attr(&mut r)?;
            if attr.kind != FileKind::Symlink {
                return Err(DecodeError::new(
                    at + 24,
                    "mode",
                    "a readlink reply's attributes are not a symbolic link's",
                ));
            }
            check_target_payload(h.payload_len)?;
            Reply::Readlink {
                attr,
                len: h.payload_len,
            }
        }
        Op::Shutdown => Reply::Shutdown,
    };
    Ok(reply)
}
