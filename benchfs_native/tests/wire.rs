//! The RPC wire format: round trips of every message, precise decode errors,
//! and a fuzz-style property test that hostile bytes never panic the decoder
//! nor make it allocate beyond its limits.

#![allow(
    clippy::unwrap_used,
    reason = "shared test code outside #[test] functions"
)]

use benchfs_native::Error;
use benchfs_native::rpc::wire::{
    self, Attr, DIR_ENTRY_FIXED, DecodeError, DirEntry, FLAG_REPLY, HEADER_LEN, Limits, MAGIC,
    MAX_PATH, Message, Op, Reply, Request, Route, VERSION, decode, decode_dir_entries,
    decode_header, decode_reply, decode_request, encode_dir_entries, encode_reply, encode_request,
};
use proptest::prelude::*;

// ------------------------------------------------------------ strategies

fn component() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_%ü.-]{1,16}".prop_filter("not . or ..", |c| c != "." && c != "..")
}

fn path() -> impl Strategy<Value = String> {
    prop::collection::vec(component(), 1..6).prop_map(|v| v.join("/"))
}

fn attr() -> impl Strategy<Value = Attr> {
    (any::<u64>(), any::<u64>(), any::<u32>()).prop_map(|(size, mtime_unix_ns, mode)| Attr {
        size,
        mtime_unix_ns,
        mode,
    })
}

/// An owned description of a request (the wire type borrows its path).
#[derive(Debug, Clone)]
enum Req {
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
    fn wire(&self) -> Request<'_> {
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

const MAX_PAYLOAD: u64 = 1 << 30;

fn request() -> impl Strategy<Value = Req> {
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
enum Rep {
    Plain(Reply<'static>),
    Error(Op, i32, String),
}

impl Rep {
    fn wire(&self) -> Reply<'_> {
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

fn op() -> impl Strategy<Value = Op> {
    prop::sample::select(Op::ALL.to_vec())
}

fn reply() -> impl Strategy<Value = Rep> {
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
fn message() -> impl Strategy<Value = Vec<u8>> {
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
fn borrowed_from(s: &str, buf: &[u8]) -> bool {
    let r = buf.as_ptr_range();
    let p = s.as_ptr();
    s.is_empty() || (r.start <= p && p.wrapping_add(s.len()) <= r.end)
}

/// Cases per property: 2000, or `WIRE_FUZZ_CASES`.
fn fuzz_cases() -> u32 {
    std::env::var("WIRE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

proptest! {
    // WIRE_FUZZ_CASES=100000 for a longer run.
    #![proptest_config(ProptestConfig::with_cases(fuzz_cases()))]

    #[test]
    fn every_request_round_trips(r in request(), id in any::<u64>(), node in any::<u32>(),
                                 channel in any::<u16>(),
                                 prefix in prop::collection::vec(any::<u8>(), 0..8)) {
        let req = r.wire();
        let mut out = prefix.clone();
        let n = encode_request(&mut out, Route::new(id, node).on(channel), &req).unwrap();
        prop_assert_eq!(&out[..prefix.len()], &prefix[..]);
        let buf = &out[prefix.len()..];
        prop_assert_eq!(n, buf.len());
        let (h, back) = decode_request(buf, &Limits::default()).unwrap();
        prop_assert_eq!(back, req);
        prop_assert_eq!((h.request_id, h.node, h.status, h.op), (id, node, 0, req.op()));
        prop_assert_eq!(h.channel, channel);
        prop_assert!(!h.is_reply());
        prop_assert_eq!(h.message_len(), buf.len());
        let payload = match req {
            Request::Write { len, .. } | Request::Ping { len, .. } => len,
            _ => 0,
        };
        prop_assert_eq!(h.payload_len, payload);
        prop_assert!(borrowed_from(back.path(), buf));
        // `decode` agrees.
        prop_assert_eq!(decode(buf, &Limits::default()).unwrap().1, Message::Request(req));
    }

    #[test]
    fn every_reply_round_trips(r in reply(), id in any::<u64>(), node in any::<u32>()) {
        let rep = r.wire();
        let mut out = Vec::new();
        let n = encode_reply(&mut out, Route::new(id, node), &rep).unwrap();
        prop_assert_eq!(n, out.len());
        let (h, back) = decode_reply(&out, &Limits::default()).unwrap();
        prop_assert_eq!(back, rep);
        prop_assert_eq!((h.request_id, h.node, h.op), (id, node, rep.op()));
        prop_assert!(h.is_reply());
        match rep {
            Reply::Error { errno, .. } => prop_assert_eq!(h.status, errno),
            _ => prop_assert_eq!(h.status, 0),
        }
        prop_assert_eq!(decode(&out, &Limits::default()).unwrap().1, Message::Reply(rep));
    }

    #[test]
    fn dir_entries_round_trip(names in prop::collection::vec(component(), 0..50),
                              modes in prop::collection::vec(any::<u32>(), 50),
                              sizes in prop::collection::vec(any::<u64>(), 50)) {
        let entries: Vec<DirEntry<'_>> = names.iter().enumerate()
            .map(|(i, n)| DirEntry { name: n, mode: modes[i], size: sizes[i] }).collect();
        let mut out = Vec::new();
        let n = encode_dir_entries(&mut out, &entries).unwrap();
        prop_assert_eq!(n, out.len());
        let back = decode_dir_entries(&out, entries.len() as u32, &Limits::default()).unwrap();
        prop_assert_eq!(back, entries);
        // The reply announcing them decodes too.
        let mut msg = Vec::new();
        encode_reply(&mut msg, Route::new(1, 2), &Reply::Readdir {
            count: names.len() as u32, next_cursor: 9, eof: true, entries_len: n as u64,
        }).unwrap();
        let (h, _) = decode_reply(&msg, &Limits::default()).unwrap();
        prop_assert!(h.check_payload(out.len()).is_ok());
    }

    /// Arbitrary bytes: never a panic; a success re-encodes to the same bytes.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        check_hostile(&bytes)?;
    }

    /// Arbitrary bytes behind a valid magic and version, to reach the
    /// deeper checks.
    #[test]
    fn arbitrary_bodies_never_panic(tail in prop::collection::vec(any::<u8>(), 0..300)) {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        bytes.extend_from_slice(&tail);
        check_hostile(&bytes)?;
    }

    /// Valid messages with bytes flipped, cut or appended.
    #[test]
    fn mutated_messages_never_panic(
        msg in message(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
        mode in 0..4u8,
    ) {
        let mut bytes = msg.clone();
        if !bytes.is_empty() {
            for (at, v) in &flips {
                let i = at.index(bytes.len());
                bytes[i] = *v;
            }
        }
        match mode {
            0 => {}
            1 => bytes.truncate(cut.index(bytes.len() + 1)),
            2 => bytes.extend_from_slice(&[0u8; 3]),
            _ => { bytes = msg.clone(); bytes.truncate(cut.index(bytes.len() + 1)); }
        }
        check_hostile(&bytes)?;
    }

    #[test]
    fn hostile_dir_entries_never_panic_nor_overallocate(
        payload in prop::collection::vec(any::<u8>(), 0..512),
        count in any::<u32>(),
    ) {
        let limits = Limits::default();
        if let Ok(v) = decode_dir_entries(&payload, count, &limits) {
            prop_assert!(v.capacity() <= payload.len() / DIR_ENTRY_FIXED);
            prop_assert!(v.len() as u32 == count);
            for e in &v {
                prop_assert!(borrowed_from(e.name, &payload));
            }
        }
    }
}

/// Feeds `bytes` to every decoder. A message that decodes must be the
/// canonical encoding of what it decoded to, stay within the limits, and
/// borrow (not copy) its text.
fn check_hostile(bytes: &[u8]) -> Result<(), TestCaseError> {
    let strict = Limits {
        max_path: 512,
        max_payload: 1 << 20,
        max_dir_entries: 1000,
    };
    for limits in [Limits::default(), strict] {
        let _ = decode_header(bytes, &limits);
        let _ = decode_request(bytes, &limits);
        let _ = decode_reply(bytes, &limits);
        match decode(bytes, &limits) {
            Ok((h, m)) => {
                prop_assert!(h.payload_len <= limits.max_payload);
                prop_assert!(usize::from(h.var_len) <= limits.max_path);
                prop_assert_eq!(h.message_len(), bytes.len());
                let mut again = Vec::new();
                match m {
                    Message::Request(r) => {
                        prop_assert!(borrowed_from(r.path(), bytes));
                        encode_request(&mut again, Route::from(&h), &r)
                            .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    }
                    Message::Reply(r) => {
                        if let Reply::Error { message, .. } = r {
                            prop_assert!(borrowed_from(message, bytes));
                        }
                        encode_reply(&mut again, Route::from(&h), &r)
                            .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    }
                }
                prop_assert_eq!(&again[..], bytes);
            }
            Err(e) => {
                prop_assert!(e.offset <= bytes.len().max(HEADER_LEN), "{}", e);
                prop_assert!(!e.reason.is_empty());
            }
        }
    }
    Ok(())
}

// ------------------------------------------------------- precise errors

fn stat_request(path: &str) -> Vec<u8> {
    let mut out = Vec::new();
    encode_request(&mut out, Route::new(7, 3), &Request::Stat { path }).unwrap();
    out
}

fn err(bytes: &[u8]) -> DecodeError {
    decode(bytes, &Limits::default()).unwrap_err()
}

#[test]
fn decode_errors_say_what_and_where() {
    let good = stat_request("dir/file");

    let e = err(&good[..20]);
    assert_eq!((e.offset, e.field), (20, "header"));
    assert!(e.reason.contains("20 bytes"), "{e}");

    let mut b = good.clone();
    b[0] = b'X';
    assert_eq!((err(&b).offset, err(&b).field), (0, "magic"));

    let mut b = good.clone();
    b[4..6].copy_from_slice(&2u16.to_le_bytes());
    let e = err(&b);
    assert_eq!((e.offset, e.field), (4, "version"));
    assert!(e.reason.contains("version 2"), "{e}");

    let mut b = good.clone();
    b[6] = 200;
    let e = err(&b);
    assert_eq!((e.offset, e.field), (6, "op"));
    assert!(e.reason.contains("200"), "{e}");

    // var_len that lies about the message's length.
    let mut b = good.clone();
    b[12..14].copy_from_slice(&100u16.to_le_bytes());
    let e = err(&b);
    assert_eq!(e.field, "message length");
    assert!(
        e.reason.contains("140") && e.reason.contains(&good.len().to_string()),
        "{e}"
    );

    // Lengths beyond the limits.
    let mut b = good.clone();
    b[12..14].copy_from_slice(&u16::MAX.to_le_bytes());
    assert_eq!((err(&b).offset, err(&b).field), (12, "var_len"));
    let mut w = Vec::new();
    encode_request(
        &mut w,
        Route::new(1, 1),
        &Request::Write {
            path: "f",
            chunk: 0,
            offset: 0,
            len: 5 << 30,
            sync: false,
        },
    )
    .unwrap();
    let e = err(&w);
    assert_eq!((e.offset, e.field), (32, "payload_len"));

    // A payload on an op that has none.
    let mut b = good.clone();
    b[32] = 1;
    assert_eq!(err(&b).field, "payload_len");

    // Invalid UTF-8 in the path, at its exact byte.
    let mut b = good.clone();
    b[HEADER_LEN + 4] = 0xff;
    let e = err(&b);
    assert_eq!((e.offset, e.field), (HEADER_LEN + 4, "path"));
    assert!(e.reason.contains("UTF-8"), "{e}");

    // Paths that would escape the store.
    for p in ["../../etc/passwd", "/abs", "a/./b", "a//b"] {
        let mut b = stat_request("x");
        b.truncate(HEADER_LEN);
        b[12..14].copy_from_slice(&(p.len() as u16).to_le_bytes());
        b.extend_from_slice(p.as_bytes());
        let e = err(&b);
        assert_eq!((e.offset, e.field), (HEADER_LEN, "path"), "{p}: {e}");
    }
    // A file op without a path.
    let mut b = stat_request("x");
    b.truncate(HEADER_LEN);
    b[12] = 0;
    assert_eq!(err(&b).field, "path");

    // Unknown flags, reserved bytes, status in a request.
    let mut b = good.clone();
    b[9] = 0x80;
    assert_eq!((err(&b).offset, err(&b).field), (8, "flags"));
    let mut b = good.clone();
    b[7] = 1;
    assert_eq!((err(&b).offset, err(&b).field), (7, "reserved"));
    let mut b = good.clone();
    b[28] = 5;
    assert_eq!((err(&b).offset, err(&b).field), (28, "status"));

    // A fixed part of the wrong size for the op.
    let mut b = good.clone();
    b[10] = 8;
    assert_eq!((err(&b).offset, err(&b).field), (10, "fixed_len"));

    // Request decoder given a reply and the other way round.
    let mut r = Vec::new();
    encode_reply(&mut r, Route::new(7, 3), &Reply::Fsync).unwrap();
    assert_eq!(
        decode_request(&r, &Limits::default()).unwrap_err().field,
        "flags"
    );
    assert_eq!(
        decode_reply(&good, &Limits::default()).unwrap_err().field,
        "flags"
    );

    // Flags of a successful reply are not allowed on an error reply.
    let mut b = Vec::new();
    let failed = Reply::Error {
        op: Op::Readdir,
        errno: libc::ENOENT,
        message: "no dir",
    };
    encode_reply(&mut b, Route::new(1, 1), &failed).unwrap();
    b[8] |= wire::FLAG_EOF as u8;
    let e = err(&b);
    assert_eq!((e.offset, e.field), (8, "flags"));
    assert!(e.reason.contains("error reply"), "{e}");

    // Readdir asking for too much.
    let mut b = Vec::new();
    encode_request(
        &mut b,
        Route::new(1, 1),
        &Request::Readdir {
            path: "",
            cursor: 0,
            max_entries: 1 << 20,
        },
    )
    .unwrap();
    let e = err(&b);
    assert_eq!((e.offset, e.field), (HEADER_LEN + 8, "max_entries"));

    // Conversion into the engine's error keeps the position.
    let engine: Error = err(&good[..3]).into();
    assert!(engine.to_string().contains("byte 3"), "{engine}");
}

#[test]
fn payload_length_is_checked_against_what_arrived() {
    let mut w = Vec::new();
    encode_request(
        &mut w,
        Route::new(1, 1),
        &Request::Write {
            path: "f",
            chunk: 2,
            offset: 10,
            len: 4096,
            sync: true,
        },
    )
    .unwrap();
    let (h, _) = decode_request(&w, &Limits::default()).unwrap();
    assert!(h.check_payload(4096).is_ok());
    let e = h.check_payload(4000).unwrap_err();
    assert!(
        e.reason.contains("4096") && e.reason.contains("4000"),
        "{e}"
    );
}

#[test]
fn encoder_rejects_what_the_decoder_would() {
    let mut out = Vec::new();
    for p in ["", "/a", "a/../b", "a\0b"] {
        assert!(
            encode_request(&mut out, Route::new(1, 1), &Request::Stat { path: p }).is_err(),
            "{p:?}"
        );
    }
    let over = Request::Read {
        path: "f",
        chunk: 0,
        offset: u64::MAX,
        len: 1,
    };
    assert!(encode_request(&mut out, Route::new(1, 1), &over).is_err());
    let long = "a/".repeat(MAX_PATH / 2) + "b";
    assert!(encode_request(&mut out, Route::new(1, 1), &Request::Stat { path: &long }).is_err());
    for errno in [0, -1, 4096] {
        let r = Reply::Error {
            op: Op::Read,
            errno,
            message: "",
        };
        assert!(encode_reply(&mut out, Route::new(1, 1), &r).is_err());
    }
    assert!(out.is_empty(), "failed encodes append nothing");
    // An over-long error text is cut at a character boundary, not refused.
    let text = "é".repeat(MAX_PATH);
    let r = Reply::Error {
        op: Op::Read,
        errno: libc::EIO,
        message: &text,
    };
    encode_reply(&mut out, Route::new(1, 1), &r).unwrap();
    match decode_reply(&out, &Limits::default()).unwrap().1 {
        Reply::Error { message, .. } => assert_eq!(message.len(), MAX_PATH),
        other => panic!("{other:?}"),
    }
    let bad = [DirEntry {
        name: "..",
        mode: 0,
        size: 0,
    }];
    let mut out = Vec::new();
    assert!(encode_dir_entries(&mut out, &bad).is_err());
    assert!(out.is_empty());
}

#[test]
fn layout_is_pinned() {
    // docs/WIRE_PROTOCOL.md, byte for byte.
    let mut out = Vec::new();
    encode_request(
        &mut out,
        Route::new(0x0102_0304_0506_0708, 5).on(0x0a0b),
        &Request::Write {
            path: "ab",
            chunk: 3,
            offset: 9,
            len: 100,
            sync: true,
        },
    )
    .unwrap();
    let want: Vec<u8> = [
        &b"BFSW"[..],
        &[1, 0],                     // version
        &[5, 0],                     // op write, reserved
        &[0x04, 0],                  // flags: SYNC
        &[16, 0],                    // fixed_len
        &[2, 0],                     // var_len
        &[0x0b, 0x0a],               // channel
        &[8, 7, 6, 5, 4, 3, 2, 1],   // request_id
        &[5, 0, 0, 0],               // node
        &[0, 0, 0, 0],               // status
        &[100, 0, 0, 0, 0, 0, 0, 0], // payload_len
        &[3, 0, 0, 0, 0, 0, 0, 0],   // chunk
        &[9, 0, 0, 0, 0, 0, 0, 0],   // offset
        &b"ab"[..],                  // path
    ]
    .concat();
    assert_eq!(out, want);
    assert_eq!(wire::HEADER_LEN, 40);
    assert_eq!(FLAG_REPLY, 1);
    for (i, op) in Op::ALL.iter().enumerate() {
        assert_eq!(usize::from(op.code()), i + 1);
        assert_eq!(Op::from_code(op.code()), Some(*op));
    }
    assert_eq!(Op::from_code(0), None);
    assert_eq!(Op::from_code(13), None);
}
