//! Generators of valid messages (proptest strategies) and the owned
//! descriptions they produce.

use benchfs_native::rpc::wire::{
    Attr, DIR_ENTRY_FIXED, FileKind, Op, Reply, Request, Route, encode_reply, encode_request,
};
use proptest::prelude::*;

pub fn component() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_%ü.-]{1,16}".prop_filter("not . or ..", |c| c != "." && c != "..")
}

pub fn path() -> impl Strategy<Value = String> {
    prop::collection::vec(component(), 1..6).prop_map(|v| v.join("/"))
}

pub fn attr() -> impl Strategy<Value = Attr> {
    (
        (any::<u64>(), any::<bool>(), any::<u64>(), any::<u64>()),
        (0..0o10000u32, any::<u32>(), any::<u32>(), any::<u32>()),
        (any::<u64>(), any::<u64>(), any::<u64>()),
    )
        .prop_map(
            |((ino, dir, size, blocks), (perm, uid, gid, nlink), (atime, mtime, ctime))| {
                let kind = if dir { FileKind::Dir } else { FileKind::File };
                Attr {
                    ino,
                    kind,
                    size,
                    blocks,
                    mode: kind.type_bits() | perm,
                    uid,
                    gid,
                    nlink,
                    atime_unix_ns: atime,
                    mtime_unix_ns: mtime,
                    ctime_unix_ns: ctime,
                }
            },
        )
}

/// An owned description of a request (the wire type borrows its path).
#[derive(Debug, Clone)]
pub enum Req {
    Ping(u64, bool),
    Create(String, u32, bool),
    Open(String, u32),
    Stat(String),
    Write(String, u64, u64, u64, bool),
    Read(String, u64, u64, u64),
    Fsync(String, bool),
    Truncate(String, u64),
    Unlink(String),
    Readdir(String, u64, u32),
    Stats,
    Shutdown(bool),
}

impl Req {
    pub fn wire(&self) -> Request<'_> {
        match self {
            Req::Ping(len, echo) => Request::Ping {
                len: *len,
                echo: *echo,
            },
            Req::Create(p, mode, exclusive) => Request::Create {
                path: p,
                mode: *mode,
                exclusive: *exclusive,
            },
            Req::Open(p, flags) => Request::Open {
                path: p,
                flags: *flags,
            },
            Req::Stat(p) => Request::Stat { path: p },
            Req::Write(p, chunk, offset, len, sync) => Request::Write {
                path: p,
                chunk: *chunk,
                offset: *offset,
                len: *len,
                sync: *sync,
            },
            Req::Read(p, chunk, offset, len) => Request::Read {
                path: p,
                chunk: *chunk,
                offset: *offset,
                len: *len,
            },
            Req::Fsync(p, datasync) => Request::Fsync {
                path: p,
                datasync: *datasync,
            },
            Req::Truncate(p, size) => Request::Truncate {
                path: p,
                size: *size,
            },
            Req::Unlink(p) => Request::Unlink { path: p },
            Req::Readdir(p, cursor, max_entries) => Request::Readdir {
                path: p,
                cursor: *cursor,
                max_entries: *max_entries,
            },
            Req::Stats => Request::Stats,
            Req::Shutdown(force) => Request::Shutdown { force: *force },
        }
    }
}

pub const MAX_PAYLOAD: u64 = 1 << 30;

pub fn request() -> impl Strategy<Value = Req> {
    let len = 0..=MAX_PAYLOAD;
    let off = 0..=u64::MAX - MAX_PAYLOAD;
    prop_oneof![
        (len.clone(), any::<bool>()).prop_map(|(l, e)| Req::Ping(l, e)),
        (path(), any::<u32>(), any::<bool>()).prop_map(|(p, m, e)| Req::Create(p, m, e)),
        (path(), any::<u32>()).prop_map(|(p, f)| Req::Open(p, f)),
        path().prop_map(Req::Stat),
        (
            path(),
            any::<u64>(),
            off.clone(),
            len.clone(),
            any::<bool>()
        )
            .prop_map(|(p, c, o, l, s)| Req::Write(p, c, o, l, s)),
        (path(), any::<u64>(), off, len).prop_map(|(p, c, o, l)| Req::Read(p, c, o, l)),
        (path(), any::<bool>()).prop_map(|(p, d)| Req::Fsync(p, d)),
        (path(), any::<u64>()).prop_map(|(p, s)| Req::Truncate(p, s)),
        path().prop_map(Req::Unlink),
        (
            prop_oneof![Just(String::new()), path()],
            any::<u64>(),
            0..=65_536u32
        )
            .prop_map(|(p, c, m)| Req::Readdir(p, c, m)),
        Just(Req::Stats),
        any::<bool>().prop_map(Req::Shutdown),
    ]
}

#[derive(Debug, Clone)]
pub enum Rep {
    Plain(Reply<'static>),
    Error(Op, i32, String),
}

impl Rep {
    pub fn wire(&self) -> Reply<'_> {
        match self {
            Rep::Plain(r) => *r,
            Rep::Error(op, errno, message) => Reply::Error {
                op: *op,
                errno: *errno,
                message,
            },
        }
    }
}

pub fn op() -> impl Strategy<Value = Op> {
    prop::sample::select(Op::ALL.to_vec())
}

pub fn reply() -> impl Strategy<Value = Rep> {
    let len = 0..=MAX_PAYLOAD;
    prop_oneof![
        (any::<u64>(), len.clone()).prop_map(|(t, l)| Rep::Plain(Reply::Ping {
            time_unix_ns: t,
            len: l
        })),
        attr().prop_map(|a| Rep::Plain(Reply::Create(a))),
        attr().prop_map(|a| Rep::Plain(Reply::Open(a))),
        attr().prop_map(|a| Rep::Plain(Reply::Stat(a))),
        any::<u64>().prop_map(|w| Rep::Plain(Reply::Write { written: w })),
        len.clone().prop_map(|l| Rep::Plain(Reply::Read { len: l })),
        Just(Rep::Plain(Reply::Fsync)),
        Just(Rep::Plain(Reply::Truncate)),
        Just(Rep::Plain(Reply::Unlink)),
        (0..=65_536u32, any::<u64>(), any::<bool>(), 0..=(1u64 << 20)).prop_map(
            |(count, next_cursor, eof, extra)| Rep::Plain(Reply::Readdir {
                count,
                next_cursor,
                eof,
                entries_len: u64::from(count) * DIR_ENTRY_FIXED as u64 + extra,
            })
        ),
        len.prop_map(|l| Rep::Plain(Reply::Stats { json_len: l })),
        Just(Rep::Plain(Reply::Shutdown)),
        (op(), 1..=4095i32, ".{0,64}").prop_map(|(o, e, m)| Rep::Error(o, e, m)),
    ]
}

/// A valid encoded message of either kind.
pub fn message() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (request(), any::<u64>(), any::<u32>()).prop_map(|(r, id, node)| {
            let mut out = Vec::new();
            encode_request(&mut out, Route::new(id, node), &r.wire())
                .map(|_| out)
                .unwrap_or_default()
        }),
        (reply(), any::<u64>(), any::<u32>()).prop_map(|(r, id, node)| {
            let mut out = Vec::new();
            encode_reply(&mut out, Route::new(id, node), &r.wire())
                .map(|_| out)
                .unwrap_or_default()
        }),
    ]
}

/// Whether `s` lies inside `buf` (decoding borrowed it, copied nothing).
pub fn borrowed_from(s: &str, buf: &[u8]) -> bool {
    let r = buf.as_ptr_range();
    let p = s.as_ptr();
    s.is_empty() || (r.start <= p && p.wrapping_add(s.len()) <= r.end)
}
