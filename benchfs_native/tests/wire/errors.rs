//! Precise decode errors (field and byte offset), the payload length
//! check and the encoder's refusals.

use benchfs_native::Error;
use benchfs_native::rpc::wire::{
    self, DecodeError, DirEntry, HEADER_LEN, Limits, MAX_PATH, Op, Reply, Request, Route, decode,
    decode_reply, decode_request, encode_dir_entries, encode_reply, encode_request,
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

/// The error decoding `bytes` fails with.
pub(crate) fn err(bytes: &[u8]) -> DecodeError {
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
