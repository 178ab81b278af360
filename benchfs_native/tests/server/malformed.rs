//! Messages that do not decode: refused with a reply when the header
//! allows it, counted, never fatal.

use crate::harness::*;

/// Sends raw bytes as a request header.
pub fn post_raw(c: &mut RawClient, header: &[u8], payload: Vec<u8>) {
    c.send_am(AM_REQUEST, header, payload);
}

#[test]
fn malformed_messages_are_refused_and_counted() {
    watchdog(120, || {
        let mut d = Daemon::start("garbage", |_| {});
        let mut c = RawClient::connect(&d.record);
        let mut good = Vec::new();
        let route = Route::new(77, c.node_id).on(c.channel).with_token(c.token);
        wire::encode_request(
            &mut good,
            route,
            &Request::Stat {
                path: "some/file",
                data: false,
            },
        )
        .unwrap();
        let mut dropped = 0u64;
        let mut answered = 0u64;
        // Dropped (the header does not decode): truncated, wrong version,
        // wrong magic, random bytes, a total length that lies.
        let mut cases: Vec<Vec<u8>> = vec![good[..20].to_vec(), Vec::new()];
        let mut v = good.clone();
        v[4] = 200; // a version no build speaks
        cases.push(v);
        let mut v = good.clone();
        v[0] = b'X';
        cases.push(v);
        let mut v = good.clone();
        v[12] = 200; // var_len larger than the message
        cases.push(v);
        cases.push(pattern(57, 11));
        cases.push(pattern(4000, 12));
        for h in &cases {
            post_raw(&mut c, h, Vec::new());
            dropped += 1;
            c.ping();
        }
        // Unknown channel: dropped.
        let mut v = Vec::new();
        wire::encode_request(
            &mut v,
            Route::new(5, c.node_id).on(999),
            &Request::Ping {
                len: 0,
                echo: false,
            },
        )
        .unwrap();
        post_raw(&mut c, &v, Vec::new());
        dropped += 1;
        c.ping();
        // Header fine, body not: EBADMSG naming the field.
        let mut v = good.clone();
        let n = v.len();
        v[n - 1] = b'/';
        post_raw(&mut c, &v, Vec::new());
        let got = c.recv();
        assert_eq!(got.errno(), libc::EBADMSG);
        assert!(got.message().contains("path"), "{}", got.message());
        answered += 1;
        // Payload length lies (header says 100 bytes, 10 arrive).
        let mut v = Vec::new();
        wire::encode_request(
            &mut v,
            Route::new(6, c.node_id).on(c.channel).with_token(c.token),
            &Request::Write {
                path: "w",
                chunk: 0,
                offset: 0,
                len: 100,
                sync: false,
            },
        )
        .unwrap();
        post_raw(&mut c, &v, vec![0; 10]);
        let got = c.recv();
        assert_eq!(got.errno(), libc::EBADMSG);
        assert!(got.message().contains("payload_len"), "{}", got.message());
        answered += 1;
        // A write larger than a chunk: its header is beyond the limits,
        // so it is dropped like any header that does not decode.
        let mut v = Vec::new();
        wire::encode_request(
            &mut v,
            Route::new(8, c.node_id).on(c.channel).with_token(c.token),
            &Request::Write {
                path: "w",
                chunk: 0,
                offset: 0,
                len: (8 << 20) as u64,
                sync: false,
            },
        )
        .unwrap();
        post_raw(&mut c, &v, vec![0; 8 << 20]);
        dropped += 1;
        c.ping();
        // Wrong node: ESTALE.
        let mut v = Vec::new();
        wire::encode_request(
            &mut v,
            Route::new(7, c.node_id + 3)
                .on(c.channel)
                .with_token(c.token),
            &Request::Stat {
                path: "x",
                data: false,
            },
        )
        .unwrap();
        post_raw(&mut c, &v, Vec::new());
        let got = c.recv();
        assert_eq!(got.errno(), libc::ESTALE);
        assert!(got.message().contains("membership"), "{}", got.message());
        answered += 1;
        // A session message that does not decode, and a disconnect of a
        // channel the client does not hold.
        c.send_am(AM_SESSION, &pattern(40, 13), Vec::new());
        dropped += 1;
        let bogus = session::encode(&Session::Disconnect {
            client_id: c.client_id + 1,
            channel: c.channel,
            token: c.token,
        });
        c.send_am(AM_SESSION, &bogus, Vec::new());
        dropped += 1;
        c.ping();
        // Connects whose worker address is garbage or cut short (UCX would
        // abort on them): refused before UCX sees them.
        let own = c.worker.address().unwrap().as_bytes().to_vec();
        let mut garbage = pattern(300, 20);
        garbage[0] = !own[0];
        for address in [vec![own[0]], own[..16].to_vec(), garbage] {
            let bad = session::encode(&Session::Connect {
                client_id: 99,
                client_name: "garbage",
                address: &address,
                time_unix_ns: now_unix_ns(),
                nonce: [0; NONCE_LEN],
                tag: [0; TAG_LEN],
            });
            c.send_am(AM_SESSION, &bad, Vec::new());
            dropped += 1;
            c.ping();
        }
        let s = c.stats();
        assert_eq!(s["decode_errors"], dropped + answered, "{s}");
        assert_eq!(s["rejected"]["header"], 8, "{s}");
        assert_eq!(s["rejected"]["channel"], 1, "{s}");
        assert_eq!(s["rejected"]["node"], 1, "{s}");
        assert_eq!(s["rejected"]["session"], 5, "{s}");
        // Still serving real work.
        c.write("after", 0, 0, vec![1, 2, 3]).ok();
        assert_eq!(c.read("after", 0, 0, 3).payload, vec![1, 2, 3]);
        c.shutdown(false);
        let summary = d.join();
        assert_eq!(summary.decode_errors, dropped + answered);
    });
}
