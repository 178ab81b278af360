//! Link targets and link count steps, bounded and checked by the encoder
//! and the decoder both, and the link replies' flags.

use benchfs_native::rpc::wire::{
    self, FLAG_REPLY, HEADER_LEN, Limits, Reply, Request, Route, decode_reply, decode_request,
    encode_reply, encode_request,
};

use crate::errors::err;

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
        count("f", 5, wire::CountStep::Data, 0, plain),
        count("", 5, wire::CountStep::Data, 0, some),
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
    for code in [0u32, 8, u32::MAX] {
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
        no_data: false,
    };
    encode_reply(&mut out, route, &unlink).unwrap();
    out[8..10].copy_from_slice(&(FLAG_REPLY | wire::FLAG_REPLACED).to_le_bytes());
    let e = decode_reply(&out, &Limits::default()).unwrap_err();
    assert_eq!(e.field, "flags", "{e}");
}
