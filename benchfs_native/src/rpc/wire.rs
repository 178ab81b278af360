//! The RPC wire format (docs/WIRE_PROTOCOL.md).
//!
//! A message is what goes into a UCX active message's *header*: a fixed
//! 40-byte [`Header`], an op-specific fixed part, and a variable part (the
//! path of a request, the text of an error reply). Bulk bytes (write data,
//! read data, readdir entries, the stats JSON) travel in the active
//! message's *payload*, of which the header only carries the length
//! (`payload_len`), so data is never copied into or out of the encoding.
//!
//! All integers are little-endian. Decoding never panics and never
//! allocates: decoded messages borrow their path from the input slice. Every
//! failure is a [`DecodeError`] naming the field and its byte offset.

use std::fmt;

use crate::error::{Error, Result};
use crate::storage::layout;

/// First four bytes of every message.
pub const MAGIC: [u8; 4] = *b"BFSW";
/// The protocol version this build speaks; a message of another version is
/// rejected (see the version policy in docs/WIRE_PROTOCOL.md).
pub const VERSION: u16 = 1;
/// Length of the fixed [`Header`].
pub const HEADER_LEN: usize = 40;
/// Longest path (or error text) the encoder produces (Linux `PATH_MAX`).
pub const MAX_PATH: usize = 4096;
/// Largest errno a reply may carry.
pub const MAX_ERRNO: i32 = 4095;
/// Length of one encoded directory entry without its name.
pub const DIR_ENTRY_FIXED: usize = 16;
/// Longest directory entry name (Linux `NAME_MAX`).
pub const MAX_NAME: usize = 255;

/// Flag: the message is a reply.
pub const FLAG_REPLY: u16 = 1 << 0;
/// Flag (create request): fail with `EEXIST` if the file exists.
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

/// Operation codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Op {
    /// Liveness and clock probe.
    Ping = 1,
    /// Create a file.
    Create = 2,
    /// Open / look up a file.
    Open = 3,
    /// Attributes of a file.
    Stat = 4,
    /// Write into one chunk.
    Write = 5,
    /// Read from one chunk.
    Read = 6,
    /// Make a file's data durable.
    Fsync = 7,
    /// Set a file's size.
    Truncate = 8,
    /// Remove a file.
    Unlink = 9,
    /// List a directory.
    Readdir = 10,
    /// Server statistics (JSON).
    Stats = 11,
    /// Stop the server.
    Shutdown = 12,
}

impl Op {
    /// Every op, in code order.
    pub const ALL: [Op; 12] = [
        Op::Ping,
        Op::Create,
        Op::Open,
        Op::Stat,
        Op::Write,
        Op::Read,
        Op::Fsync,
        Op::Truncate,
        Op::Unlink,
        Op::Readdir,
        Op::Stats,
        Op::Shutdown,
    ];

    /// The op of wire code `code`.
    pub fn from_code(code: u8) -> Option<Op> {
        Op::ALL.get(usize::from(code).checked_sub(1)?).copied()
    }

    /// The wire code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Lower-case name (as in traces).
    pub fn name(self) -> &'static str {
        match self {
            Op::Ping => "ping",
            Op::Create => "create",
            Op::Open => "open",
            Op::Stat => "stat",
            Op::Write => "write",
            Op::Read => "read",
            Op::Fsync => "fsync",
            Op::Truncate => "truncate",
            Op::Unlink => "unlink",
            Op::Readdir => "readdir",
            Op::Stats => "stats",
            Op::Shutdown => "shutdown",
        }
    }

    /// Flags a request of this op may set.
    fn request_flags(self) -> u16 {
        match self {
            Op::Create => FLAG_EXCL,
            Op::Write => FLAG_SYNC,
            Op::Fsync => FLAG_DATASYNC,
            Op::Shutdown => FLAG_FORCE,
            Op::Ping => FLAG_ECHO,
            _ => 0,
        }
    }

    /// Flags a successful reply of this op may set (besides `FLAG_REPLY`).
    fn reply_flags(self) -> u16 {
        match self {
            Op::Readdir => FLAG_EOF,
            _ => 0,
        }
    }

    /// Fixed-part length of a request.
    fn request_fixed_len(self) -> usize {
        match self {
            Op::Create | Op::Open | Op::Truncate => 8,
            Op::Write => 16,
            Op::Read => 24,
            Op::Readdir => 16,
            _ => 0,
        }
    }

    /// Fixed-part length of a successful reply.
    fn reply_fixed_len(self) -> usize {
        match self {
            Op::Create | Op::Open | Op::Stat => ATTR_LEN,
            Op::Ping | Op::Write => 8,
            Op::Readdir => 16,
            _ => 0,
        }
    }

    /// How a request's variable part is used.
    fn request_path(self) -> PathRule {
        match self {
            Op::Ping | Op::Stats | Op::Shutdown => PathRule::None,
            Op::Readdir => PathRule::Dir,
            _ => PathRule::File,
        }
    }

    /// Whether a request carries a payload.
    fn request_payload(self) -> bool {
        matches!(self, Op::Write | Op::Ping)
    }

    /// Whether a successful reply carries a payload.
    fn reply_payload(self) -> bool {
        matches!(self, Op::Ping | Op::Read | Op::Readdir | Op::Stats)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PathRule {
    /// No variable part.
    None,
    /// A valid file path.
    File,
    /// A valid path, or empty for the root directory.
    Dir,
}

/// Length of an encoded [`Attr`].
pub const ATTR_LEN: usize = 24;

/// File attributes (create, open and stat replies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Attr {
    /// Size in bytes.
    pub size: u64,
    /// Last modification, nanoseconds since the Unix epoch.
    pub mtime_unix_ns: u64,
    /// `st_mode`: file type bits and permissions.
    pub mode: u32,
}

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
    /// Create `path` with permissions `mode`.
    Create {
        /// File path.
        path: &'a str,
        /// Permission bits.
        mode: u32,
        /// Fail with `EEXIST` if it exists.
        exclusive: bool,
    },
    /// Open (look up) `path`; `flags` are Linux `open(2)` flags.
    Open {
        /// File path.
        path: &'a str,
        /// `O_*` flags.
        flags: u32,
    },
    /// Attributes of `path`.
    Stat {
        /// File path.
        path: &'a str,
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
    /// Remove `path`.
    Unlink {
        /// File path.
        path: &'a str,
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
        }
    }

    /// The path (empty for ops without one).
    pub fn path(&self) -> &str {
        match *self {
            Request::Create { path, .. }
            | Request::Open { path, .. }
            | Request::Stat { path }
            | Request::Write { path, .. }
            | Request::Read { path, .. }
            | Request::Fsync { path, .. }
            | Request::Truncate { path, .. }
            | Request::Unlink { path }
            | Request::Readdir { path, .. } => path,
            Request::Ping { .. } | Request::Stats | Request::Shutdown { .. } => "",
        }
    }
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
    /// Created.
    Create(Attr),
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
    /// Removed.
    Unlink,
    /// Directory entries: `count` entries, `entries_len` payload bytes
    /// (see [`encode_dir_entries`]).
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
            Reply::Create(_) => Op::Create,
            Reply::Open(_) => Op::Open,
            Reply::Stat(_) => Op::Stat,
            Reply::Write { .. } => Op::Write,
            Reply::Read { .. } => Op::Read,
            Reply::Fsync => Op::Fsync,
            Reply::Truncate => Op::Truncate,
            Reply::Unlink => Op::Unlink,
            Reply::Readdir { .. } => Op::Readdir,
            Reply::Stats { .. } => Op::Stats,
            Reply::Shutdown => Op::Shutdown,
            Reply::Error { op, .. } => *op,
        }
    }
}

/// The fixed header, as decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Operation.
    pub op: Op,
    /// `FLAG_*` bits.
    pub flags: u16,
    /// Length of the op's fixed part.
    pub fixed_len: u16,
    /// Length of the variable part (path or error text).
    pub var_len: u16,
    /// The sender's channel on the receiving daemon (assigned at connect,
    /// docs/WIRE_PROTOCOL.md "Sessions"), echoed in the reply; 0: none.
    pub channel: u16,
    /// Chosen by the client, echoed in the reply.
    pub request_id: u64,
    /// Request: the target node id; reply: the replying node id.
    pub node: u32,
    /// 0, or a reply's positive errno.
    pub status: i32,
    /// Length of the active message's payload.
    pub payload_len: u64,
}

impl Header {
    /// Whether the message is a reply.
    pub fn is_reply(&self) -> bool {
        self.flags & FLAG_REPLY != 0
    }

    /// Length of the whole encoded message (header, fixed and variable part).
    pub fn message_len(&self) -> usize {
        HEADER_LEN + usize::from(self.fixed_len) + usize::from(self.var_len)
    }

    /// Checks that the payload that arrived has the announced length.
    pub fn check_payload(&self, actual: usize) -> Result<(), DecodeError> {
        if actual as u64 != self.payload_len {
            return Err(DecodeError::new(
                32,
                "payload_len",
                format!(
                    "header announces {} payload bytes but {actual} arrived",
                    self.payload_len
                ),
            ));
        }
        Ok(())
    }
}

/// Why a message does not decode, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset of the offending field in the message.
    pub offset: usize,
    /// The field's name.
    pub field: &'static str,
    /// What is wrong.
    pub reason: String,
}

impl DecodeError {
    pub(crate) fn new(offset: usize, field: &'static str, reason: impl Into<String>) -> Self {
        DecodeError {
            offset,
            field,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte {} ({}): {}", self.offset, self.field, self.reason)
    }
}

impl std::error::Error for DecodeError {}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Error::invalid("rpc message", e.to_string())
    }
}

// ---------------------------------------------------------------- encoding

fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Where a message goes and which request it belongs to: the header
/// fields the caller chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Route {
    /// Chosen by the client, echoed in the reply.
    pub request_id: u64,
    /// Request: the target node id; reply: the replying node id.
    pub node: u32,
    /// The client's channel on the daemon (0: none).
    pub channel: u16,
}

impl Route {
    /// Request `request_id` for (or reply from) `node`, on no channel.
    pub fn new(request_id: u64, node: u32) -> Route {
        Route {
            request_id,
            node,
            channel: 0,
        }
    }

    /// The same route on `channel`.
    pub fn on(self, channel: u16) -> Route {
        Route { channel, ..self }
    }
}

impl From<&Header> for Route {
    fn from(h: &Header) -> Route {
        Route {
            request_id: h.request_id,
            node: h.node,
            channel: h.channel,
        }
    }
}

struct Frame<'s> {
    op: Op,
    flags: u16,
    route: Route,
    status: i32,
    payload_len: u64,
    var: &'s [u8],
}

/// Appends a header for `frame` whose fixed part `fixed` follows; the
/// variable part is appended after it.
fn put_frame(out: &mut Vec<u8>, f: &Frame<'_>, fixed: &[u8]) {
    out.reserve(HEADER_LEN + fixed.len() + f.var.len());
    out.extend_from_slice(&MAGIC);
    put_u16(out, VERSION);
    out.push(f.op.code());
    out.push(0);
    put_u16(out, f.flags);
    // Both lengths are bounded by the callers (fixed <= 24, var <= MAX_PATH).
    put_u16(out, fixed.len() as u16);
    put_u16(out, f.var.len() as u16);
    put_u16(out, f.route.channel);
    put_u64(out, f.route.request_id);
    put_u32(out, f.route.node);
    out.extend_from_slice(&f.status.to_le_bytes());
    put_u64(out, f.payload_len);
    out.extend_from_slice(fixed);
    out.extend_from_slice(f.var);
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
    let mut fixed = [0u8; 24];
    let mut flags = 0;
    let mut payload_len = 0;
    let fixed_len = op.request_fixed_len();
    match *request {
        Request::Create {
            mode, exclusive, ..
        } => {
            fixed[0..4].copy_from_slice(&mode.to_le_bytes());
            if exclusive {
                flags |= FLAG_EXCL;
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
        Request::Stat { .. } | Request::Unlink { .. } | Request::Stats => {}
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

fn put_attr(fixed: &mut [u8; 24], a: &Attr) {
    fixed[0..8].copy_from_slice(&a.size.to_le_bytes());
    fixed[8..16].copy_from_slice(&a.mtime_unix_ns.to_le_bytes());
    fixed[16..20].copy_from_slice(&a.mode.to_le_bytes());
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
    let mut fixed = [0u8; 24];
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
        Reply::Create(a) | Reply::Open(a) | Reply::Stat(a) => put_attr(&mut fixed, &a),
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
        Reply::Fsync | Reply::Truncate | Reply::Unlink | Reply::Shutdown => {}
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

// ---------------------------------------------------------------- decoding

/// A bounds-checked little-endian reader that knows its absolute offset.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(end) => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(DecodeError::new(
                self.pos,
                field,
                format!(
                    "truncated: needs {n} bytes, {} left",
                    self.buf.len().saturating_sub(self.pos)
                ),
            )),
        }
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        let s = self.take(N, field)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn u8(&mut self, field: &'static str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(field)?[0])
    }
    fn u16(&mut self, field: &'static str) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array(field)?))
    }
    fn u32(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }
    fn u64(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }

    /// Reads a field that must be zero.
    fn zero<const N: usize>(&mut self, field: &'static str) -> Result<(), DecodeError> {
        let at = self.pos;
        let a = self.array::<N>(field)?;
        if a.iter().any(|&b| b != 0) {
            return Err(DecodeError::new(at, field, "reserved field is not zero"));
        }
        Ok(())
    }
}

/// Decodes and checks the fixed header of `buf` against `limits`: magic,
/// version, op, reserved fields, flags, lengths, and that `buf` is exactly
/// as long as the header says. Use it to learn the request id (to answer
/// with an error) when the body does not decode.
pub fn decode_header(buf: &[u8], limits: &Limits) -> Result<Header, DecodeError> {
    if buf.len() < HEADER_LEN {
        return Err(DecodeError::new(
            buf.len(),
            "header",
            format!(
                "truncated: the message has {} bytes, a header needs {HEADER_LEN}",
                buf.len()
            ),
        ));
    }
    let mut r = Reader { buf, pos: 0 };
    let magic: [u8; 4] = r.array("magic")?;
    if magic != MAGIC {
        return Err(DecodeError::new(
            0,
            "magic",
            format!("expected {MAGIC:02x?} (\"BFSW\"), got {magic:02x?}"),
        ));
    }
    let version = r.u16("version")?;
    if version != VERSION {
        return Err(DecodeError::new(
            4,
            "version",
            format!("version {version} is not supported (this build speaks {VERSION})"),
        ));
    }
    let code = r.u8("op")?;
    let op = Op::from_code(code)
        .ok_or_else(|| DecodeError::new(6, "op", format!("unknown op code {code}")))?;
    r.zero::<1>("reserved")?;
    let flags = r.u16("flags")?;
    let fixed_len = r.u16("fixed_len")?;
    let var_len = r.u16("var_len")?;
    let channel = r.u16("channel")?;
    let request_id = r.u64("request_id")?;
    let node = r.u32("node")?;
    let status = i32::from_le_bytes(r.array("status")?);
    let payload_len = r.u64("payload_len")?;
    let h = Header {
        op,
        flags,
        fixed_len,
        var_len,
        channel,
        request_id,
        node,
        status,
        payload_len,
    };

    let reply = h.is_reply();
    if !reply && status != 0 {
        return Err(DecodeError::new(
            28,
            "status",
            format!("a request must have status 0, got {status}"),
        ));
    }
    if reply && !(0..=MAX_ERRNO).contains(&status) {
        return Err(DecodeError::new(
            28,
            "status",
            format!("errno {status} is outside 0..={MAX_ERRNO}"),
        ));
    }
    let failed = reply && status != 0;
    let kind = if failed {
        "error reply"
    } else if reply {
        "reply"
    } else {
        "request"
    };
    let allowed = if failed {
        FLAG_REPLY
    } else if reply {
        FLAG_REPLY | op.reply_flags()
    } else {
        FLAG_REPLY | op.request_flags()
    };
    if flags & !allowed != 0 {
        return Err(DecodeError::new(
            8,
            "flags",
            format!(
                "flags {:#06x} not allowed for a {op} {kind}",
                flags & !allowed
            ),
        ));
    }
    let want_fixed = if failed {
        0
    } else if reply {
        op.reply_fixed_len()
    } else {
        op.request_fixed_len()
    };
    if usize::from(fixed_len) != want_fixed {
        return Err(DecodeError::new(
            10,
            "fixed_len",
            format!("a {op} {kind} has a {want_fixed}-byte fixed part, header says {fixed_len}"),
        ));
    }
    let var_allowed = if reply {
        failed
    } else {
        op.request_path() != PathRule::None
    };
    if !var_allowed && var_len != 0 {
        return Err(DecodeError::new(
            12,
            "var_len",
            format!("this {op} message has no variable part, header says {var_len} bytes"),
        ));
    }
    if usize::from(var_len) > limits.max_path.min(MAX_PATH) {
        return Err(DecodeError::new(
            12,
            "var_len",
            format!(
                "{var_len} bytes exceed the limit of {}",
                limits.max_path.min(MAX_PATH)
            ),
        ));
    }
    let payload_allowed = if reply {
        !failed && op.reply_payload()
    } else {
        op.request_payload()
    };
    if !payload_allowed && payload_len != 0 {
        return Err(DecodeError::new(
            32,
            "payload_len",
            format!("this {op} message has no payload, header says {payload_len} bytes"),
        ));
    }
    if payload_len > limits.max_payload {
        return Err(DecodeError::new(
            32,
            "payload_len",
            format!(
                "{payload_len} bytes exceed the limit of {}",
                limits.max_payload
            ),
        ));
    }
    let total = h.message_len();
    if buf.len() != total {
        return Err(DecodeError::new(
            buf.len().min(total),
            "message length",
            format!(
                "the header describes {total} bytes but the message has {}",
                buf.len()
            ),
        ));
    }
    Ok(h)
}

/// The variable part of `buf` (decoded header `h`) as text.
fn var_str<'a>(buf: &'a [u8], h: &Header, field: &'static str) -> Result<&'a str, DecodeError> {
    let at = HEADER_LEN + usize::from(h.fixed_len);
    let bytes = buf.get(at..at + usize::from(h.var_len)).unwrap_or_default();
    std::str::from_utf8(bytes)
        .map_err(|e| DecodeError::new(at + e.valid_up_to(), field, "invalid UTF-8".to_owned()))
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
            let mode = r.u32("mode")?;
            r.zero::<4>("reserved")?;
            Request::Create {
                path,
                mode,
                exclusive: h.flags & FLAG_EXCL != 0,
            }
        }
        Op::Open => {
            let flags = r.u32("open_flags")?;
            r.zero::<4>("reserved")?;
            Request::Open { path, flags }
        }
        Op::Stat => Request::Stat { path },
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
        Op::Unlink => Request::Unlink { path },
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
    Ok((h, req))
}

fn read_attr(r: &mut Reader<'_>) -> Result<Attr, DecodeError> {
    let size = r.u64("size")?;
    let mtime_unix_ns = r.u64("mtime_unix_ns")?;
    let mode = r.u32("mode")?;
    r.zero::<4>("reserved")?;
    Ok(Attr {
        size,
        mtime_unix_ns,
        mode,
    })
}

/// Decodes a reply message checked against `limits`. An error reply
/// decodes to [`Reply::Error`], its text borrowed from `buf`.
pub fn decode_reply<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<(Header, Reply<'a>), DecodeError> {
    let h = decode_header(buf, limits)?;
    if !h.is_reply() {
        return Err(DecodeError::new(
            8,
            "flags",
            "expected a reply, got a request",
        ));
    }
    if h.status != 0 {
        let message = var_str(buf, &h, "message")?;
        return Ok((
            h,
            Reply::Error {
                op: h.op,
                errno: h.status,
                message,
            },
        ));
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
        Op::Create => Reply::Create(read_attr(&mut r)?),
        Op::Open => Reply::Open(read_attr(&mut r)?),
        Op::Stat => Reply::Stat(read_attr(&mut r)?),
        Op::Write => Reply::Write {
            written: r.u64("written")?,
        },
        Op::Read => Reply::Read { len: h.payload_len },
        Op::Fsync => Reply::Fsync,
        Op::Truncate => Reply::Truncate,
        Op::Unlink => Reply::Unlink,
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
        Op::Shutdown => Reply::Shutdown,
    };
    Ok((h, reply))
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

// ------------------------------------------------------ directory entries

/// One directory entry of a readdir reply's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirEntry<'a> {
    /// Entry name (one path component).
    pub name: &'a str,
    /// `st_mode`: type bits and permissions.
    pub mode: u32,
    /// Size in bytes.
    pub size: u64,
}

fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("empty name");
    }
    if name.len() > MAX_NAME {
        return Err("name longer than 255 bytes");
    }
    if name == "." || name == ".." {
        return Err("'.' or '..' is not an entry name");
    }
    if name.contains(['/', '\0']) {
        return Err("name contains '/' or NUL");
    }
    Ok(())
}

/// Appends `entries` in the readdir payload encoding (per entry:
/// `name_len: u16, reserved: u16, mode: u32, size: u64, name`); returns the
/// bytes appended (the reply's `entries_len`).
pub fn encode_dir_entries(out: &mut Vec<u8>, entries: &[DirEntry<'_>]) -> Result<usize> {
    let before = out.len();
    for e in entries {
        if let Err(why) = check_name(e.name) {
            out.truncate(before);
            return Err(Error::invalid("entry name", format!("{:?}: {why}", e.name)));
        }
        // At most MAX_NAME, checked above.
        put_u16(out, e.name.len() as u16);
        put_u16(out, 0);
        put_u32(out, e.mode);
        put_u64(out, e.size);
        out.extend_from_slice(e.name.as_bytes());
    }
    Ok(out.len() - before)
}

/// Decodes `count` directory entries from a readdir reply's payload. Offsets
/// in errors are relative to the payload. Allocates one vector of at most
/// `min(count, payload.len() / 16)` entries; names borrow from `payload`.
pub fn decode_dir_entries<'a>(
    payload: &'a [u8],
    count: u32,
    limits: &Limits,
) -> Result<Vec<DirEntry<'a>>, DecodeError> {
    if count > limits.max_dir_entries {
        return Err(DecodeError::new(
            0,
            "count",
            format!("{count} exceeds the limit of {}", limits.max_dir_entries),
        ));
    }
    let cap = (count as usize).min(payload.len() / DIR_ENTRY_FIXED);
    let mut out = Vec::with_capacity(cap);
    let mut r = Reader {
        buf: payload,
        pos: 0,
    };
    for _ in 0..count {
        let at = r.pos;
        let name_len = usize::from(r.u16("name_len")?);
        r.zero::<2>("reserved")?;
        let mode = r.u32("mode")?;
        let size = r.u64("size")?;
        let name_at = r.pos;
        let bytes = r.take(name_len, "name")?;
        let name = std::str::from_utf8(bytes)
            .map_err(|e| DecodeError::new(name_at + e.valid_up_to(), "name", "invalid UTF-8"))?;
        if let Err(why) = check_name(name) {
            return Err(DecodeError::new(at, "name", why));
        }
        out.push(DirEntry { name, mode, size });
    }
    if r.pos != payload.len() {
        return Err(DecodeError::new(
            r.pos,
            "entries",
            format!(
                "{} bytes after the last of {count} entries",
                payload.len() - r.pos
            ),
        ));
    }
    Ok(out)
}
