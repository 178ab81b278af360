//! Precise decode errors (field and byte offset), the payload length
//! check, the encoder's refusals, and the byte layout pinned.

use benchfs_native::Error;
use benchfs_native::rpc::wire::{
    self, DecodeError, DirEntry, FLAG_REPLY, HEADER_LEN, Limits, MAX_PATH, Op, Reply, Request,
    Route, decode, decode_reply, decode_request, encode_dir_entries, encode_reply, encode_request,
};

/// A request of an op whose path must be a file path (no fixed part).
fn stat_request(path: &str) -> Vec<u8> {
    let mut out = Vec::new();
    encode_request(
        &mut out,
        Route::new(7, 3),
        &Request::Fsync {
            path,
            datasync: false,
        },
    )
    .unwrap();
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
    b[4..6].copy_from_slice(&1u16.to_le_bytes());
    let e = err(&b);
    assert_eq!((e.offset, e.field), (4, "version"));
    assert!(e.reason.contains("version 1"), "{e}");

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
        e.reason.contains("148") && e.reason.contains(&good.len().to_string()),
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
            encode_request(
                &mut out,
                Route::new(1, 1),
                &Request::Fsync {
                    path: p,
                    datasync: false
                }
            )
            .is_err(),
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
    assert!(
        encode_request(
            &mut out,
            Route::new(1, 1),
            &Request::Stat {
                path: &long,
                data: false
            }
        )
        .is_err()
    );
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
        ino: 0,
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
        Route::new(0x0102_0304_0506_0708, 5)
            .on(0x0a0b)
            .with_token(0x1112_1314_1516_1718),
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
        &[10, 0],                                          // version
        &[5, 0],                                           // op write, reserved
        &[0x04, 0],                                        // flags: SYNC
        &[16, 0],                                          // fixed_len
        &[2, 0],                                           // var_len
        &[0x0b, 0x0a],                                     // channel
        &[8, 7, 6, 5, 4, 3, 2, 1],                         // request_id
        &[5, 0, 0, 0],                                     // node
        &[0, 0, 0, 0],                                     // status
        &[100, 0, 0, 0, 0, 0, 0, 0],                       // payload_len
        &[0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11], // token
        &[3, 0, 0, 0, 0, 0, 0, 0],                         // chunk
        &[9, 0, 0, 0, 0, 0, 0, 0],                         // offset
        &b"ab"[..],                                        // path
    ]
    .concat();
    assert_eq!(out, want);
    assert_eq!(wire::HEADER_LEN, 48);
    assert_eq!(FLAG_REPLY, 1);
    for (i, op) in Op::ALL.iter().enumerate() {
        assert_eq!(usize::from(op.code()), i + 1);
        assert_eq!(Op::from_code(op.code()), Some(*op));
    }
    assert_eq!(Op::from_code(0), None);
    assert_eq!(Op::from_code(22), None);
}

#[test]
fn reply_and_fixed_part_layouts_are_pinned() {
    // A stat reply's attr, byte for byte (docs/WIRE_PROTOCOL.md, "attr").
    let attr = wire::Attr {
        ino: 0x0102,
        kind: wire::FileKind::Dir,
        size: 3,
        blocks: 4,
        mode: 0o755,
        uid: 5,
        gid: 6,
        nlink: 2,
        atime_unix_ns: 7,
        mtime_unix_ns: 8,
        ctime_unix_ns: 9,
    };
    let mut out = Vec::new();
    encode_reply(&mut out, Route::new(1, 2), &Reply::Stat(attr)).unwrap();
    let le = |v: u64, n: usize| v.to_le_bytes()[..n].to_vec();
    let want: Vec<u8> = [
        le(0x0102, 8),
        le(3, 8),
        le(4, 8),
        le(u64::from(libc::S_IFDIR | 0o755), 4),
        le(5, 4),
        le(6, 4),
        le(2, 4),
        le(7, 8),
        le(8, 8),
        le(9, 8),
    ]
    .concat();
    assert_eq!(out[8..10], (FLAG_REPLY).to_le_bytes());
    assert_eq!(out[10..12], [64, 0], "fixed_len");
    assert_eq!(&out[HEADER_LEN..], &want[..]);

    // A link_count add: ino, step, mask, then the shared attributes with
    // their reserved word.
    out.clear();
    let shared = wire::SharedAttr {
        mode: 0o640,
        uid: 11,
        gid: 12,
        atime_unix_ns: 13,
        mtime_unix_ns: 14,
        ctime_unix_ns: 15,
    };
    let add = Request::LinkCount {
        path: "",
        ino: 0x99,
        step: wire::CountStep::Add,
        mask: 0,
        attr: shared,
    };
    encode_request(&mut out, Route::new(1, 2), &add).unwrap();
    let want: Vec<u8> = [
        le(0x99, 8),
        le(2, 4),
        le(0, 4),
        le(0o640, 4),
        le(11, 4),
        le(12, 4),
        le(0, 4),
        le(13, 8),
        le(14, 8),
        le(15, 8),
    ]
    .concat();
    assert_eq!(out[10..12], [56, 0], "fixed_len");
    assert_eq!(&out[HEADER_LEN..], &want[..]);
}

#[test]
fn link_targets_are_bounded_both_ways() {
    let route = Route::new(1, 1);
    let symlink = |len| Request::Symlink {
        path: "l",
        uid: 0,
        gid: 0,
        len,
        parent_here: false,
    };
    let mut out = Vec::new();
    for len in [0, wire::MAX_TARGET as u64 + 1] {
        let e = encode_request(&mut out, route, &symlink(len)).unwrap_err();
        assert_eq!(e.errno(), Some(libc::ENAMETOOLONG), "{e}");
    }
    assert!(out.is_empty());
    // The decoder refuses the same lengths, at payload_len.
    encode_request(&mut out, route, &symlink(5)).unwrap();
    for len in [0u64, wire::MAX_TARGET as u64 + 1] {
        let mut b = out.clone();
        b[32..40].copy_from_slice(&len.to_le_bytes());
        let e = err(&b);
        assert_eq!((e.offset, e.field), (32, "payload_len"), "{e}");
    }
    // A link of a file carries no target, a link of a symlink one.
    let record = |mode| wire::Record {
        ino: 5,
        mode,
        ..Default::default()
    };
    let link = |mode, target_len| Request::Link {
        path: "to",
        record: record(mode),
        target_len,
        parent_here: false,
        exclusive: false,
        linked: false,
    };
    let mut out = Vec::new();
    for (mode, len) in [
        (libc::S_IFREG | 0o644, 3),
        (libc::S_IFLNK | 0o777, 0),
        (libc::S_IFDIR | 0o755, 0),
    ] {
        assert!(encode_request(&mut out, route, &link(mode, len)).is_err());
    }
    assert!(out.is_empty());
    encode_request(&mut out, route, &link(libc::S_IFLNK | 0o777, 3)).unwrap();
    let mut b = out.clone();
    b[32..40].copy_from_slice(&0u64.to_le_bytes());
    assert_eq!(err(&b).field, "payload_len");
    let mut b = out.clone();
    let mode_at = HEADER_LEN + 8;
    b[mode_at..mode_at + 4].copy_from_slice(&(libc::S_IFDIR | 0o755).to_le_bytes());
    assert_eq!((err(&b).offset, err(&b).field), (mode_at, "mode"));
    // A readlink reply is a link's attributes and its target.
    let attr = wire::Attr {
        ino: 9,
        kind: wire::FileKind::Symlink,
        mode: libc::S_IFLNK | 0o777,
        size: 4,
        ..Default::default()
    };
    let mut out = Vec::new();
    let file = wire::Attr {
        kind: wire::FileKind::File,
        ..attr
    };
    assert!(encode_reply(&mut out, route, &Reply::Readlink { attr: file, len: 4 }).is_err());
    assert!(encode_reply(&mut out, route, &Reply::Readlink { attr, len: 0 }).is_err());
    encode_reply(&mut out, route, &Reply::Readlink { attr, len: 4 }).unwrap();
    let mut b = out.clone();
    let mode_at = HEADER_LEN + 24;
    b[mode_at..mode_at + 4].copy_from_slice(&(libc::S_IFREG | 0o777).to_le_bytes());
    assert_eq!((err(&b).offset, err(&b).field), (mode_at, "mode"));
}

#[test]
fn link_count_steps_are_checked_both_ways() {
    let route = Route::new(1, 1);
    let plain = wire::SharedAttr::default();
    let some = wire::SharedAttr {
        mode: 0o640,
        uid: 3,
        ctime_unix_ns: 9,
        ..plain
    };
    let count = |path, ino, step, mask, attr| Request::LinkCount {
        path,
        ino,
        step,
        mask,
        attr,
    };
    let mut out = Vec::new();
    // A mark names a record, a count step none; an id is never 0; only a
    // set has a mask (known bits; empty: ctime only); attributes are an add's or
    // a set's (without ctime).
    for bad in [
        count("", 5, wire::CountStep::Mark, 0, plain),
        count("f", 5, wire::CountStep::Add, 0, plain),
        count("", 0, wire::CountStep::Get, 0, plain),
        count("", 5, wire::CountStep::Get, wire::SET_MODE, plain),
        count("", 5, wire::CountStep::Set, 1 << 6, plain),
        count("", 5, wire::CountStep::Set, wire::SET_MODE, some),
        count("", 5, wire::CountStep::Drop, 0, some),
        count("", 5, wire::CountStep::Undo, 0, some),
        count("f", 5, wire::CountStep::Undo, 0, plain),
    ] {
        assert!(encode_request(&mut out, route, &bad).is_err(), "{bad:?}");
    }
    assert!(out.is_empty());
    encode_request(
        &mut out,
        route,
        &count("", 5, wire::CountStep::Drop, 0, plain),
    )
    .unwrap();
    let step_at = HEADER_LEN + 8;
    let mask_at = HEADER_LEN + 12;
    let attr_at = HEADER_LEN + 16;
    for code in [0u32, 7, u32::MAX] {
        let mut b = out.clone();
        b[step_at..step_at + 4].copy_from_slice(&code.to_le_bytes());
        assert_eq!((err(&b).offset, err(&b).field), (step_at, "step"));
    }
    // A mark's code on a message without a path.
    let mut b = out.clone();
    b[step_at..step_at + 4].copy_from_slice(&4u32.to_le_bytes());
    assert_eq!(err(&b).field, "path");
    let mut b = out.clone();
    b[HEADER_LEN..HEADER_LEN + 8].copy_from_slice(&0u64.to_le_bytes());
    assert_eq!((err(&b).offset, err(&b).field), (HEADER_LEN, "ino"));
    // A drop with a mask, or with attributes.
    let mut b = out.clone();
    b[mask_at] = 1;
    assert_eq!((err(&b).offset, err(&b).field), (mask_at, "mask"));
    let mut b = out.clone();
    b[attr_at + 4] = 1;
    assert_eq!((err(&b).offset, err(&b).field), (attr_at, "attr"));
    // The shared mode has permission bits only; its reserved word is 0.
    let mut b = out.clone();
    b[attr_at..attr_at + 4].copy_from_slice(&0o10_0644u32.to_le_bytes());
    assert_eq!((err(&b).offset, err(&b).field), (attr_at, "mode"));
    let mut b = out.clone();
    b[attr_at + 12] = 1;
    assert_eq!(err(&b).field, "reserved");
    // The linked flag is link's (request) and unlink's, link's and
    // link_count's (reply).
    let mut b = out.clone();
    b[8..10].copy_from_slice(&wire::FLAG_LINKED.to_le_bytes());
    assert_eq!(err(&b).field, "flags");
    // An add's attributes, a set's values and an undo go through.
    for good in [
        count("", 5, wire::CountStep::Add, 0, some),
        count("", 5, wire::CountStep::Undo, 0, plain),
        count(
            "",
            5,
            wire::CountStep::Set,
            wire::SET_MODE | wire::SET_SIZE,
            wire::SharedAttr {
                ctime_unix_ns: 0,
                ..some
            },
        ),
    ] {
        let mut b = Vec::new();
        encode_request(&mut b, route, &good).unwrap();
        assert_eq!(decode_request(&b, &Limits::default()).unwrap().1, good);
    }
}

#[test]
fn a_link_count_reply_carries_attributes_by_its_flag() {
    let route = Route::new(1, 1);
    let attr = wire::SharedAttr {
        mode: 0o600,
        uid: 4,
        gid: 5,
        atime_unix_ns: 6,
        mtime_unix_ns: 7,
        ctime_unix_ns: 8,
    };
    let mut out = Vec::new();
    let with = Reply::LinkCount {
        count: 2,
        attr: Some(attr),
    };
    encode_reply(&mut out, route, &with).unwrap();
    let flags = u16::from_le_bytes([out[8], out[9]]);
    assert_eq!(flags, FLAG_REPLY | wire::FLAG_LINKED);
    assert_eq!(decode_reply(&out, &Limits::default()).unwrap().1, with);
    // Without the flag, attributes are refused; all zero, they are absent.
    let mut b = out.clone();
    b[8..10].copy_from_slice(&FLAG_REPLY.to_le_bytes());
    let e = decode_reply(&b, &Limits::default()).unwrap_err();
    assert_eq!((e.offset, e.field), (HEADER_LEN + 8, "attr"));
    b[HEADER_LEN + 8..HEADER_LEN + 48].fill(0);
    let none = Reply::LinkCount {
        count: 2,
        attr: None,
    };
    assert_eq!(decode_reply(&b, &Limits::default()).unwrap().1, none);
}

#[test]
fn a_link_reply_names_a_replaced_name_by_its_flag() {
    let route = Route::new(1, 1);
    let link = |replaced, linked, name_replaced| Reply::Link {
        replaced,
        linked,
        name_replaced,
    };
    // A replaced id or linked name without the flag: refused both ways.
    let mut out = Vec::new();
    for bad in [link(9, false, false), link(0, true, false)] {
        let e = encode_reply(&mut out, route, &bad).unwrap_err();
        assert!(e.to_string().contains("name_replaced"), "{e}");
    }
    assert!(out.is_empty());
    encode_reply(&mut out, route, &link(9, false, true)).unwrap();
    let flags = u16::from_le_bytes([out[8], out[9]]);
    assert_eq!(flags, FLAG_REPLY | wire::FLAG_REPLACED);
    let mut b = out.clone();
    b[8..10].copy_from_slice(&FLAG_REPLY.to_le_bytes());
    let e = decode_reply(&b, &Limits::default()).unwrap_err();
    assert_eq!((e.offset, e.field), (8, "flags"), "{e}");
    // A replaced symbolic link: id 0, the flag alone says a name went.
    out.clear();
    encode_reply(&mut out, route, &link(0, false, true)).unwrap();
    match decode_reply(&out, &Limits::default()).unwrap().1 {
        Reply::Link {
            replaced,
            linked,
            name_replaced,
        } => assert_eq!((replaced, linked, name_replaced), (0, false, true)),
        r => panic!("{r:?}"),
    }
    // The flag is link's reply's only: an unlink reply with it is refused.
    out.clear();
    let unlink = Reply::Unlink {
        ino: 0,
        linked: false,
    };
    encode_reply(&mut out, route, &unlink).unwrap();
    out[8..10].copy_from_slice(&(FLAG_REPLY | wire::FLAG_REPLACED).to_le_bytes());
    let e = decode_reply(&out, &Limits::default()).unwrap_err();
    assert_eq!(e.field, "flags", "{e}");
}
