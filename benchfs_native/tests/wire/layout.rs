//! The byte layout of requests, replies and their fixed parts, pinned
//! (docs/WIRE_PROTOCOL.md).

use benchfs_native::rpc::wire::{
    self, FLAG_REPLY, HEADER_LEN, Op, Reply, Request, Route, encode_reply, encode_request,
};

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
        &[11, 0],                                          // version
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
    encode_reply(
        &mut out,
        Route::new(1, 2),
        &Reply::Stat {
            attr,
            no_data: false,
        },
    )
    .unwrap();
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
