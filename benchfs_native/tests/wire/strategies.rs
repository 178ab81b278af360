//! Generators of valid messages (proptest strategies) and the owned
//! descriptions they produce.

use benchfs_native::rpc::wire::{
    Attr, CountStep, DIR_ENTRY_FIXED, FileKind, MAX_TARGET, Op, Record, Reply, Request, RmdirStep,
    Route, SET_ALL, SharedAttr, StatFsReply, encode_reply, encode_request,
};
use proptest::prelude::*;

pub fn component() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_%ü.-]{1,16}".prop_filter("not . or ..", |c| c != "." && c != "..")
}

pub fn path() -> impl Strategy<Value = String> {
    prop::collection::vec(component(), 1..6).prop_map(|v| v.join("/"))
}

/// A path or the root ("").
pub fn dir_path() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), path()]
}

/// A symbolic link target's length.
pub fn target_len() -> impl Strategy<Value = u64> {
    1..=MAX_TARGET as u64
}

/// A file record as a link request carries it (no target), or a symbolic
/// link's with its target's length.
pub fn record() -> impl Strategy<Value = (Record, u64)> {
    (
        any::<u64>(),
        prop_oneof![
            (0..0o10000u32).prop_map(|perm| (libc::S_IFREG | perm, 0)),
            (0..0o10000u32).prop_map(|perm| (libc::S_IFCHR | perm, 0)),
            target_len().prop_map(|len| (libc::S_IFLNK | 0o777, len)),
        ],
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        any::<[u64; 3]>(),
    )
        .prop_map(|(ino, (mode, len), rdev, uid, gid, [a, m, c])| {
            let r = Record {
                ino,
                mode,
                rdev,
                uid,
                gid,
                atime_unix_ns: a,
                mtime_unix_ns: m,
                ctime_unix_ns: c,
            };
            (r, len)
        })
}

pub fn kind() -> impl Strategy<Value = FileKind> {
    prop::sample::select(vec![
        FileKind::File,
        FileKind::Dir,
        FileKind::Symlink,
        FileKind::Fifo,
        FileKind::Socket,
        FileKind::BlockDev,
        FileKind::CharDev,
    ])
}

pub fn attr() -> impl Strategy<Value = Attr> {
    kind().prop_flat_map(attr_of)
}

pub fn attr_of(kind: FileKind) -> impl Strategy<Value = Attr> {
    (
        (any::<u64>(), any::<u64>(), any::<u64>()),
        (0..0o10000u32, any::<u32>(), any::<u32>(), any::<u32>()),
        (any::<u64>(), any::<u64>(), any::<u64>()),
    )
        .prop_map(
            move |((ino, size, blocks), (perm, uid, gid, nlink), (atime, mtime, ctime))| Attr {
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
            },
        )
}

/// An owned description of a request (the wire type borrows its path).
#[derive(Debug, Clone)]
pub enum Req {
    Ping(u64, bool),
    Create(String, [u32; 4], [bool; 2]),
    Open(String, u32),
    Stat(String, bool),
    Write(String, u64, u64, u64, bool),
    Read(String, u64, u64, u64),
    Fsync(String, bool),
    Truncate(String, u64),
    Unlink(String, u64, bool, bool),
    Readdir(String, u64, u32),
    Stats,
    Shutdown(bool),
    Mkdir(String, u32, u32, u32, bool),
    Rmdir(String, RmdirStep, u64),
    CheckParent(String, [bool; 2]),
    Link(String, Record, u64, [bool; 3]),
    Setattr(String, [u32; 4], [u64; 3], bool),
    Statfs,
    Symlink(String, u32, u32, u64, bool),
    Readlink(String),
    LinkCount(String, u64, CountStep, u32, SharedAttr),
}

impl Req {
    pub fn wire(&self) -> Request<'_> {
        match self {
            Req::Ping(len, echo) => Request::Ping {
                len: *len,
                echo: *echo,
            },
            Req::Create(p, [mode, rdev, uid, gid], [exclusive, here]) => Request::Create {
                path: p,
                mode: *mode,
                rdev: *rdev,
                uid: *uid,
                gid: *gid,
                exclusive: *exclusive,
                parent_here: *here,
            },
            Req::Open(p, flags) => Request::Open {
                path: p,
                flags: *flags,
            },
            Req::Stat(p, data) => Request::Stat {
                path: p,
                data: *data,
            },
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
            Req::Unlink(p, ino, data, here) => Request::Unlink {
                path: p,
                ino: *ino,
                data: *data,
                parent_here: *here,
            },
            Req::Readdir(p, cursor, max_entries) => Request::Readdir {
                path: p,
                cursor: *cursor,
                max_entries: *max_entries,
            },
            Req::Stats => Request::Stats,
            Req::Shutdown(force) => Request::Shutdown { force: *force },
            Req::Mkdir(p, mode, uid, gid, here) => Request::Mkdir {
                path: p,
                mode: *mode,
                uid: *uid,
                gid: *gid,
                parent_here: *here,
            },
            Req::Rmdir(p, step, ino) => Request::Rmdir {
                path: p,
                step: *step,
                ino: *ino,
            },
            Req::CheckParent(p, [subdir, stamp_only]) => Request::CheckParent {
                path: p,
                subdir: *subdir,
                stamp_only: *stamp_only,
            },
            Req::Link(p, record, target_len, [here, exclusive, linked]) => Request::Link {
                path: p,
                record: *record,
                target_len: *target_len,
                parent_here: *here,
                exclusive: *exclusive,
                linked: *linked,
            },
            Req::Setattr(p, [mask, mode, uid, gid], [size, atime, mtime], data) => {
                Request::Setattr {
                    path: p,
                    mask: *mask,
                    mode: *mode,
                    uid: *uid,
                    gid: *gid,
                    size: *size,
                    atime_unix_ns: *atime,
                    mtime_unix_ns: *mtime,
                    data: *data,
                }
            }
            Req::Statfs => Request::Statfs,
            Req::Symlink(p, uid, gid, len, here) => Request::Symlink {
                path: p,
                uid: *uid,
                gid: *gid,
                len: *len,
                parent_here: *here,
            },
            Req::Readlink(p) => Request::Readlink { path: p },
            Req::LinkCount(p, ino, step, mask, attr) => Request::LinkCount {
                path: p,
                ino: *ino,
                step: *step,
                mask: *mask,
                attr: *attr,
            },
        }
    }
}

pub const MAX_PAYLOAD: u64 = 1 << 30;

pub fn request() -> impl Strategy<Value = Req> {
    let len = 0..=MAX_PAYLOAD;
    let off = 0..=u64::MAX - MAX_PAYLOAD;
    prop_oneof![
        (len.clone(), any::<bool>()).prop_map(|(l, e)| Req::Ping(l, e)),
        (path(), any::<[u32; 4]>(), any::<[bool; 2]>()).prop_map(|(p, o, f)| Req::Create(p, o, f)),
        (path(), any::<u32>()).prop_map(|(p, f)| Req::Open(p, f)),
        (dir_path(), any::<bool>()).prop_map(|(p, d)| Req::Stat(p, d)),
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
        (path(), any::<u64>(), any::<bool>(), any::<bool>())
            .prop_map(|(p, i, d, h)| Req::Unlink(p, i, d, h)),
        (dir_path(), any::<u64>(), 0..=65_536u32).prop_map(|(p, c, m)| Req::Readdir(p, c, m)),
        Just(Req::Stats),
        any::<bool>().prop_map(Req::Shutdown),
        (
            path(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<bool>()
        )
            .prop_map(|(p, m, u, g, h)| Req::Mkdir(p, m, u, g, h)),
        (
            path(),
            prop::sample::select(vec![
                RmdirStep::Mark,
                RmdirStep::Commit,
                RmdirStep::Unmark,
                RmdirStep::Undo
            ]),
            any::<u64>()
        )
            .prop_map(|(p, s, i)| Req::Rmdir(p, s, i)),
        (dir_path(), any::<[bool; 2]>()).prop_map(|(p, f)| Req::CheckParent(p, f)),
        (path(), record(), any::<[bool; 3]>()).prop_map(|(p, (r, l), f)| Req::Link(p, r, l, f)),
        (
            dir_path(),
            (0..=SET_ALL, any::<u32>(), any::<u32>(), any::<u32>()),
            any::<[u64; 3]>(),
            any::<bool>()
        )
            .prop_map(|(p, (m, mo, u, g), t, d)| Req::Setattr(p, [m, mo, u, g], t, d)),
        Just(Req::Statfs),
        (
            path(),
            any::<u32>(),
            any::<u32>(),
            target_len(),
            any::<bool>()
        )
            .prop_map(|(p, u, g, l, h)| Req::Symlink(p, u, g, l, h)),
        path().prop_map(Req::Readlink),
        link_count(),
    ]
}

/// Mode, owner and times of a hard-linked file's names.
pub fn shared_attr() -> impl Strategy<Value = SharedAttr> {
    (0..=0o7777u32, any::<u32>(), any::<u32>(), any::<[u64; 3]>()).prop_map(
        |(mode, uid, gid, [a, m, c])| SharedAttr {
            mode,
            uid,
            gid,
            atime_unix_ns: a,
            mtime_unix_ns: m,
            ctime_unix_ns: c,
        },
    )
}

/// A count step (no path) or a mark (a path), of a non-zero id: an add
/// with the source's attributes, a set with a mask and values (no ctime),
/// the others with neither.
pub fn link_count() -> impl Strategy<Value = Req> {
    let plain = SharedAttr::default();
    prop_oneof![
        (
            1..=u64::MAX,
            prop::sample::select(vec![
                CountStep::Get,
                CountStep::Drop,
                CountStep::Undo,
                CountStep::Data
            ])
        )
            .prop_map(move |(i, s)| Req::LinkCount(String::new(), i, s, 0, plain)),
        (1..=u64::MAX, shared_attr()).prop_map(|(i, a)| Req::LinkCount(
            String::new(),
            i,
            CountStep::Add,
            0,
            a
        )),
        (1..=u64::MAX, 1..=SET_ALL, shared_attr()).prop_map(|(i, m, a)| {
            let a = SharedAttr {
                ctime_unix_ns: 0,
                ..a
            };
            Req::LinkCount(String::new(), i, CountStep::Set, m, a)
        }),
        (path(), 1..=u64::MAX).prop_map(move |(p, i)| Req::LinkCount(
            p,
            i,
            CountStep::Mark,
            0,
            plain
        )),
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
        (attr(), any::<bool>())
            .prop_map(|(attr, created)| Rep::Plain(Reply::Create { attr, created })),
        attr().prop_map(|a| Rep::Plain(Reply::Mkdir(a))),
        attr().prop_map(|a| Rep::Plain(Reply::Setattr(a))),
        (any::<u64>(), any::<bool>(), any::<bool>()).prop_map(|(ino, linked, no_data)| {
            Rep::Plain(Reply::Unlink {
                ino,
                linked,
                no_data,
            })
        }),
        // A replaced id or linked name always replaced a name.
        (
            prop_oneof![Just(0u64), any::<u64>()],
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(replaced, linked, other)| {
                Rep::Plain(Reply::Link {
                    replaced,
                    linked,
                    name_replaced: replaced != 0 || linked || other,
                })
            }),
        (any::<u64>(), prop::option::of(shared_attr()))
            .prop_map(|(count, attr)| Rep::Plain(Reply::LinkCount { count, attr })),
        Just(Rep::Plain(Reply::Rmdir)),
        Just(Rep::Plain(Reply::CheckParent)),
        (any::<[u64; 7]>(), any::<u32>()).prop_map(|([bs, b, bf, ba, f, ff, id], nm)| {
            Rep::Plain(Reply::Statfs(StatFsReply {
                block_size: bs,
                blocks: b,
                blocks_free: bf,
                blocks_avail: ba,
                files: f,
                files_free: ff,
                name_max: nm,
                fs_id: id,
            }))
        }),
        attr().prop_map(|a| Rep::Plain(Reply::Open(a))),
        (attr(), any::<bool>())
            .prop_map(|(attr, no_data)| Rep::Plain(Reply::Stat { attr, no_data })),
        any::<u64>().prop_map(|w| Rep::Plain(Reply::Write { written: w })),
        len.clone().prop_map(|l| Rep::Plain(Reply::Read { len: l })),
        Just(Rep::Plain(Reply::Fsync)),
        Just(Rep::Plain(Reply::Truncate)),
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
        attr().prop_map(|a| Rep::Plain(Reply::Symlink(a))),
        (attr_of(FileKind::Symlink), target_len())
            .prop_map(|(attr, len)| Rep::Plain(Reply::Readlink { attr, len })),
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
