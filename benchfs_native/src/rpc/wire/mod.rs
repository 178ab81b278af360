//! The RPC wire format (docs/WIRE_PROTOCOL.md).
//!
//! A message is what goes into a UCX active message's *header*: a fixed
//! 48-byte [`Header`], an op-specific fixed part, and a variable part (the
//! path of a request, the text of an error reply). Bulk bytes (write data,
//! read data, readdir entries, the stats JSON) travel in the active
//! message's *payload*, of which the header only carries the length
//! (`payload_len`), so data is never copied into or out of the encoding.
//!
//! All integers are little-endian. Decoding never panics and never
//! allocates: decoded messages borrow their path from the input slice. Every
//! failure is a [`DecodeError`] naming the field and its byte offset.
//!
//! * `op`: the operation codes and what each op's messages carry.
//! * `header`: the fixed header, its encoding and its checks.
//! * `request` (the request, its encoder, decoder and shared rules),
//!   `reply`: the two kinds of message.
//! * `attr`, `shared`: the attributes replies and link_count carry.
//! * `dir_entry`: the readdir payload.
//! * `codec`: the `Writer` the encoders write a fixed
//!   part with, its mirror the bounds-checked reader, and [`DecodeError`].
//!
//! What a new op touches is listed in docs/WIRE_PROTOCOL.md, "Adding an op".

mod attr;
mod codec;
mod dir_entry;
mod header;
mod op;
mod reply;
mod request;
mod shared;

pub use attr::{Attr, FileKind, StatFsReply};
pub use codec::DecodeError;
pub use dir_entry::{DIR_ENTRY_FIXED, DirEntry, MAX_NAME, decode_dir_entries, encode_dir_entries};
pub use header::{Header, Route, decode_header};
pub use op::Op;
pub use reply::{Reply, decode_reply, decode_reply_body, encode_reply};
pub use request::{
    CountStep, OwnedRequest, Record, Request, RequestOf, RmdirStep, check_target, decode_request,
    decode_request_body, encode_request,
};
pub use shared::{SHARED_ATTR_LEN, SharedAttr};

/// First four bytes of every message.
pub const MAGIC: [u8; 4] = *b"BFSW";
/// The protocol version this build speaks; a message of another version is
/// rejected (see the version policy in docs/WIRE_PROTOCOL.md).
/// 2: the channel token in the header. 3: the namespace (directories,
/// rename, attributes, file data addressed by file id). 4: symbolic links
/// (symlink, readlink, a link's record moved by link). 5: hard links
/// (link's `EXCL` and `LINKED` flags, the link_count op). 6: the
/// attributes a hard-linked file's names share, kept by its home daemon
/// (link_count's mask and attributes, its reply's `LINKED` flag, the set
/// step). 7: link_count's undo step (a link's add taken back when its
/// source was gone at the mark). 8: statfs's `fs_id` (each file system
/// counted once by the client).
/// 11: a file's data known absent (`NO_DATA` on the stat and unlink
/// replies, link_count's data step).
pub const VERSION: u16 = 11;
/// Length of the fixed [`Header`].
pub const HEADER_LEN: usize = 48;
/// Length of an encoded [`Attr`].
pub const ATTR_LEN: usize = 64;
/// Length of an encoded [`StatFsReply`].
pub const STATFS_LEN: usize = 64;
/// Longest fixed part of any message.
pub const FIXED_MAX: usize = 64;
/// Longest path (or error text) the encoder produces (Linux `PATH_MAX`).
pub const MAX_PATH: usize = 4096;
/// Longest symbolic link target (Linux's `PATH_MAX` less its NUL: what
/// `symlink(2)` accepts).
pub const MAX_TARGET: usize = 4095;
/// Largest errno a reply may carry.
pub const MAX_ERRNO: i32 = 4095;

/// Flag: the message is a reply.
pub const FLAG_REPLY: u16 = 1 << 0;
/// Flag (create, link request): fail with `EEXIST` if the name exists.
pub const FLAG_EXCL: u16 = 1 << 1;
/// Flag (write request): make the data durable before replying.
pub const FLAG_SYNC: u16 = 1 << 2;
/// Flag (fsync request): data only (`fdatasync`).
pub const FLAG_DATASYNC: u16 = 1 << 3;
/// Flag (shutdown request): do not wait for in-flight requests.
pub const FLAG_FORCE: u16 = 1 << 4;
/// Flag (readdir reply): no entries after these.
pub const FLAG_EOF: u16 = 1 << 5;
/// Flag (ping request): send the payload back in the reply.
pub const FLAG_ECHO: u16 = 1 << 6;
/// Flag (stat, unlink, setattr request): the path names a file's data
/// object (its backing file, `@<id>`), not a namespace record.
pub const FLAG_DATA: u16 = 1 << 7;
/// Flag (create reply): the record was created by this request (not found
/// existing by a non-exclusive create).
pub const FLAG_CREATED: u16 = 1 << 8;
/// Flag (create, mkdir, link request): the receiving daemon also owns the
/// parent directory's record, so it checks the parent itself, in the same
/// step as the insert (and the client sends no check_parent).
pub const FLAG_PARENT_HERE: u16 = 1 << 9;
/// Flag (link request): the record is one of several names of its file (a
/// hard link; its link count is on its home daemon). (unlink and link
/// reply): the removed or replaced name was such a name, so the client
/// drops the count instead of removing the data. (link_count reply): the
/// home daemon keeps the file's shared attributes, which the reply carries.
pub const FLAG_LINKED: u16 = 1 << 10;
/// Flag (link reply): a name was there and the inserted record replaced
/// it, whether or not it had data (a symbolic link's `replaced` id is 0),
/// so the parent was never empty meanwhile and the client skips its check.
pub const FLAG_REPLACED: u16 = 1 << 11;
/// Flag (check_parent request): the entry added or removed is a
/// directory, so the parent counts one subdirectory more or less (its
/// `nlink`).
pub const FLAG_SUBDIR: u16 = 1 << 12;
/// Flag (check_parent request): an entry went or was replaced; the
/// directory's times are stamped without checking that it takes entries.
pub const FLAG_STAMP_ONLY: u16 = 1 << 13;
/// Flag (stat, unlink reply of a file's record): no data was ever written
/// to the file (its home daemon, which holds the record, was never told
/// of a write or a truncate), so its size is 0 and no daemon holds any of
/// it: the client asks no data daemon.
pub const FLAG_NO_DATA: u16 = 1 << 14;

/// Bits of a [`Request::Setattr`]'s `mask`: which fields to set.
pub const SET_MODE: u32 = 1 << 0;
/// Set the owner.
pub const SET_UID: u32 = 1 << 1;
/// Set the group.
pub const SET_GID: u32 = 1 << 2;
/// Set the size.
pub const SET_SIZE: u32 = 1 << 3;
/// Set the access time.
pub const SET_ATIME: u32 = 1 << 4;
/// Set the modification time.
pub const SET_MTIME: u32 = 1 << 5;
/// Every `SET_*` bit.
pub const SET_ALL: u32 = (1 << 6) - 1;

/// Receiver-side bounds. A message beyond them is rejected before anything
/// is done with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest path / error text accepted (at most [`MAX_PATH`]).
    pub max_path: usize,
    /// Largest `payload_len` accepted (write data, read data, readdir
    /// entries, stats JSON), and largest read length requested.
    pub max_payload: u64,
    /// Most directory entries one readdir may ask for or return.
    pub max_dir_entries: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_path: MAX_PATH,
            max_payload: 1 << 30,
            max_dir_entries: 65_536,
        }
    }
}

/// A decoded message of either kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message<'a> {
    /// A request.
    Request(Request<'a>),
    /// A reply.
    Reply(Reply<'a>),
}

/// Decodes a request or a reply, whichever `buf` holds.
pub fn decode<'a>(buf: &'a [u8], limits: &Limits) -> Result<(Header, Message<'a>), DecodeError> {
    let h = decode_header(buf, limits)?;
    if h.is_reply() {
        decode_reply(buf, limits).map(|(h, r)| (h, Message::Reply(r)))
    } else {
        decode_request(buf, limits).map(|(h, r)| (h, Message::Request(r)))
    }
}
