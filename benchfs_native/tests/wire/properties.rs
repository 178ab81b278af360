//! Properties: every message round trips, and hostile bytes never panic
//! a decoder nor make it allocate beyond its limits.

use benchfs_native::rpc::wire::{
    DIR_ENTRY_FIXED, DirEntry, HEADER_LEN, Limits, MAGIC, Message, Reply, Request, Route, VERSION,
    decode, decode_dir_entries, decode_header, decode_reply, decode_reply_body, decode_request,
    decode_request_body, encode_dir_entries, encode_reply, encode_request,
};
use proptest::prelude::*;

use crate::strategies::*;

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
                                 channel in any::<u16>(), token in any::<u64>(),
                                 prefix in prop::collection::vec(any::<u8>(), 0..8)) {
        let req = r.wire();
        let mut out = prefix.clone();
        let route = Route::new(id, node).on(channel).with_token(token);
        let n = encode_request(&mut out, route, &req).unwrap();
        prop_assert_eq!(&out[..prefix.len()], &prefix[..]);
        let buf = &out[prefix.len()..];
        prop_assert_eq!(n, buf.len());
        let (h, back) = decode_request(buf, &Limits::default()).unwrap();
        prop_assert_eq!(back, req);
        prop_assert_eq!((h.request_id, h.node, h.status, h.op), (id, node, 0, req.op()));
        prop_assert_eq!((h.channel, h.token), (channel, token));
        prop_assert!(!h.is_reply());
        prop_assert_eq!(h.message_len(), buf.len());
        let payload = match req {
            Request::Write { len, .. }
            | Request::Ping { len, .. }
            | Request::Symlink { len, .. }
            | Request::Link { target_len: len, .. } => len,
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
                              inos in prop::collection::vec(any::<u64>(), 50)) {
        let entries: Vec<DirEntry<'_>> = names.iter().enumerate()
            .map(|(i, n)| DirEntry { name: n, mode: modes[i], ino: inos[i] }).collect();
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
        // The body decoders given the original's header, which no longer
        // describes these bytes: an error at worst, never a panic.
        let limits = Limits::default();
        if let Ok(h) = decode_header(&msg, &limits) {
            let _ = decode_request_body(&bytes, &h, &limits);
            let _ = decode_reply_body(&bytes, &h, &limits);
        }
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
