//! Replies: each op's answer, or an error with its errno, encoded and
//! decoded (each op's fixed part written in the order it is read).

use super::attr::{Attr, FileKind, StatFsReply, put_attr, put_statfs, read_attr, read_statfs};
use super::codec::{DecodeError, Reader, Writer};
use super::dir_entry::DIR_ENTRY_FIXED;
use super::header::{Frame, Header, Route, decode_header, flag, put_frame, var_str};
use super::op::Op;
use super::request::{check_target_payload, target_len_ok};
use super::shared::{SharedAttr, put_shared, read_shared};
use super::{
    FIXED_MAX, FLAG_CREATED, FLAG_EOF, FLAG_LINKED, FLAG_NO_DATA, FLAG_REPLACED, FLAG_REPLY,
    HEADER_LEN, Limits, MAX_ERRNO, MAX_PATH, MAX_TARGET,
};
use crate::error::{Error, Result};

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
    Stat {
        /// The record's (or a data object's) attributes.
        attr: Attr,
        /// A file's record whose data was never written (`FLAG_NO_DATA`):
        /// its size is 0, and no daemon holds any of it.
        no_data: bool,
    },
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
        /// The file's data was never written (`FLAG_NO_DATA`): no daemon
        /// has any to remove.
        no_data: bool,
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
            Reply::Stat { .. } => Op::Stat,
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

    /// The length of the payload the reply comes with: read data, the
    /// entries, the JSON, an echo, a link's target (0 for the others).
    pub fn payload_len(&self) -> u64 {
        match *self {
            Reply::Ping { len, .. } | Reply::Read { len } | Reply::Readlink { len, .. } => len,
            Reply::Readdir { entries_len, .. } => entries_len,
            Reply::Stats { json_len } => json_len,
            _ => 0,
        }
    }
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
/// `route.node`, on `route.channel`) to `out` and returns the number of
/// bytes appended. An error message longer than [`MAX_PATH`] bytes is cut;
/// an errno outside `1..=4095` is an error.
pub fn encode_reply(out: &mut Vec<u8>, route: Route, reply: &Reply<'_>) -> Result<usize> {
    check(reply)?;
    let op = reply.op();
    let mut w = Writer::<FIXED_MAX>::new();
    let flags = FLAG_REPLY | write_fixed(reply, &mut w);
    let (status, var) = match *reply {
        Reply::Error { errno, message, .. } => (errno, truncate_str(message, MAX_PATH).as_bytes()),
        _ => {
            debug_assert_eq!(w.bytes().len(), op.reply_fixed_len(), "{op}'s fixed part");
            (0, &[][..])
        }
    };
    let frame = Frame {
        op,
        flags,
        route,
        status,
        payload_len: reply.payload_len(),
        var,
    };
    let before = out.len();
    put_frame(out, &frame, w.bytes());
    Ok(out.len() - before)
}

/// Writes the op's fixed part (none for an error); returns its flags
/// besides `FLAG_REPLY`.
#[inline(always)]
fn write_fixed<const N: usize>(reply: &Reply<'_>, w: &mut Writer<N>) -> u16 {
    match *reply {
        Reply::Ping { time_unix_ns, .. } => {
            w.u64(time_unix_ns);
            0
        }
        Reply::Create { attr, created } => {
            put_attr(w, &attr);
            flag(created, FLAG_CREATED)
        }
        Reply::Stat { attr, no_data } => {
            put_attr(w, &attr);
            flag(no_data, FLAG_NO_DATA)
        }
        Reply::Open(a)
        | Reply::Mkdir(a)
        | Reply::Setattr(a)
        | Reply::Symlink(a)
        | Reply::Readlink { attr: a, .. } => {
            put_attr(w, &a);
            0
        }
        Reply::Write { written } => {
            w.u64(written);
            0
        }
        Reply::Unlink {
            ino,
            linked,
            no_data,
        } => {
            w.u64(ino);
            flag(linked, FLAG_LINKED) | flag(no_data, FLAG_NO_DATA)
        }
        Reply::Readdir {
            count,
            next_cursor,
            eof,
            ..
        } => {
            w.u32(count);
            w.zero::<4>();
            w.u64(next_cursor);
            flag(eof, FLAG_EOF)
        }
        Reply::Link {
            replaced,
            linked,
            name_replaced,
        } => {
            w.u64(replaced);
            flag(linked, FLAG_LINKED) | flag(name_replaced, FLAG_REPLACED)
        }
        Reply::LinkCount { count, attr } => {
            w.u64(count);
            put_shared(w, &attr.unwrap_or_default());
            flag(attr.is_some(), FLAG_LINKED)
        }
        Reply::Statfs(f) => {
            put_statfs(w, &f);
            0
        }
        Reply::Read { .. }
        | Reply::Stats { .. }
        | Reply::Fsync
        | Reply::Truncate
        | Reply::Shutdown
        | Reply::Rmdir
        | Reply::CheckParent
        | Reply::Error { .. } => 0,
    }
}

/// What the encoder refuses to write: fields a decoder would reject.
fn check(reply: &Reply<'_>) -> Result<()> {
    match *reply {
        Reply::Readlink { attr, .. } if attr.kind != FileKind::Symlink => Err(Error::invalid(
            "mode",
            "a readlink reply carries a symbolic link's attributes",
        )),
        Reply::Readlink { len, .. } if !target_len_ok(len) => Err(Error::invalid(
            "len",
            format!("a link target of {len} bytes (1 to {MAX_TARGET})"),
        )),
        Reply::Link {
            replaced,
            linked,
            name_replaced: false,
        } if replaced != 0 || linked => Err(Error::invalid(
            "name_replaced",
            "a link reply naming a replaced id or a linked name replaced a name",
        )),
        Reply::Error { errno, .. } if !(1..=MAX_ERRNO).contains(&errno) => Err(Error::invalid(
            "errno",
            format!("must be between 1 and {MAX_ERRNO}, got {errno}"),
        )),
        _ => Ok(()),
    }
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
        Op::Stat => Reply::Stat {
            attr: read_attr(&mut r)?,
            no_data: h.flags & FLAG_NO_DATA != 0,
        },
        Op::Write => Reply::Write {
            written: r.u64("written")?,
        },
        Op::Read => Reply::Read { len: h.payload_len },
        Op::Fsync => Reply::Fsync,
        Op::Truncate => Reply::Truncate,
        Op::Unlink => Reply::Unlink {
            ino: r.u64("ino")?,
            linked: h.flags & FLAG_LINKED != 0,
            no_data: h.flags & FLAG_NO_DATA != 0,
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
        Op::Statfs => Reply::Statfs(read_statfs(&mut r)?),
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
