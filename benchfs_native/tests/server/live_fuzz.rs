//! A live fuzz of a running daemon: a hostile client on its own session
//! sends mutated requests of every op (and mutated session messages) while
//! a well-formed client keeps writing and reading back. The daemon must
//! neither crash nor stop serving the good client, and count what it
//! could not decode. `LIVE_FUZZ_CASES` (default 3,000) and `LIVE_FUZZ_SEED`
//! set the amount and the seed; `LIVE_FUZZ_CASES=100000 cargo test
//! --release --test server live_fuzz` is the long run of docs/RELIABILITY.md.

use crate::harness::*;

/// xorshift64*: a small deterministic generator, so that a failing seed
/// fails again.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One well-formed request of every op but `Shutdown`, as the seeds.
fn seed_requests() -> Vec<Request<'static>> {
    vec![
        Request::Ping {
            len: 16,
            echo: true,
        },
        Request::Create {
            path: "f/a",
            mode: 0o644,
            rdev: 0,
            uid: 0,
            gid: 0,
            exclusive: true,
            parent_here: false,
        },
        Request::Open {
            path: "f/a",
            flags: 2,
        },
        Request::Stat {
            path: "f/a",
            data: false,
        },
        Request::Write {
            path: "@00000000000000ab",
            chunk: 1,
            offset: 512,
            len: 64,
            sync: false,
        },
        Request::Read {
            path: "@00000000000000ab",
            chunk: 1,
            offset: 0,
            len: 4096,
        },
        Request::Fsync {
            path: "@00000000000000ab",
            datasync: true,
        },
        Request::Truncate {
            path: "@00000000000000ab",
            size: 100,
        },
        Request::Unlink {
            path: "f/a",
            ino: 0,
            data: false,
            parent_here: false,
        },
        Request::Readdir {
            path: "f",
            cursor: 0,
            max_entries: 64,
        },
        Request::Stats,
        Request::Mkdir {
            path: "f",
            mode: 0o755,
            uid: 0,
            gid: 0,
            parent_here: true,
        },
        Request::Rmdir {
            path: "f",
            step: RmdirStep::Mark,
            ino: 0,
        },
        Request::CheckParent {
            path: "f",
            subdir: true,
            stamp_only: false,
        },
        Request::Link {
            path: "f/b",
            record: wire::Record {
                ino: 0xab,
                mode: 0o100644,
                ..Default::default()
            },
            target_len: 0,
            parent_here: false,
            exclusive: true,
            linked: true,
        },
        Request::Link {
            path: "f/m",
            record: wire::Record {
                ino: 0xac,
                mode: 0o120777,
                ..Default::default()
            },
            target_len: 3,
            parent_here: true,
            exclusive: false,
            linked: false,
        },
        Request::Setattr {
            path: "f/a",
            mask: wire::SET_ALL,
            mode: 0o600,
            uid: 1,
            gid: 1,
            size: 10,
            atime_unix_ns: 1,
            mtime_unix_ns: 2,
            data: false,
        },
        Request::Statfs,
        Request::Symlink {
            path: "f/l",
            uid: 0,
            gid: 0,
            len: 5,
            parent_here: false,
        },
        Request::Readlink { path: "f/l" },
        Request::LinkCount {
            path: "",
            ino: 0x0000_0800_0000_00ab,
            step: wire::CountStep::Add,
            mask: 0,
            attr: wire::SharedAttr {
                mode: 0o640,
                uid: 7,
                gid: 8,
                atime_unix_ns: 1,
                mtime_unix_ns: 2,
                ctime_unix_ns: 3,
            },
        },
        Request::LinkCount {
            path: "",
            ino: 0x0000_0800_0000_00ab,
            step: wire::CountStep::Set,
            mask: wire::SET_MODE | wire::SET_MTIME,
            attr: wire::SharedAttr {
                mode: 0o600,
                mtime_unix_ns: 5,
                ..wire::SharedAttr::default()
            },
        },
        Request::LinkCount {
            path: "",
            ino: 0x0000_0800_0000_00ab,
            step: wire::CountStep::Undo,
            mask: 0,
            attr: wire::SharedAttr::default(),
        },
        Request::LinkCount {
            path: "f/a",
            ino: 0xab,
            step: wire::CountStep::Mark,
            mask: 0,
            attr: wire::SharedAttr::default(),
        },
    ]
}

/// `seed` changed in 1 to 4 places: bytes overwritten, bits flipped, cut
/// short, grown, or a slice repeated. The header is kept whole most of
/// the time, so that the body decoders and the ops behind them are reached.
fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut m = seed.to_vec();
    let keep = if rng.below(5) == 0 {
        0
    } else {
        wire::HEADER_LEN.min(m.len())
    };
    for _ in 0..1 + rng.below(4) {
        let span = m.len().saturating_sub(keep).max(1);
        let at = keep + rng.below(span);
        match rng.below(5) {
            0 if at < m.len() => m[at] = rng.next() as u8,
            1 if at < m.len() => m[at] ^= 1 << rng.below(8),
            2 => m.truncate(at.min(m.len())),
            3 => {
                let n = 1 + rng.below(64);
                m.extend(rng.bytes(n));
            }
            _ => {
                let from = rng.below(m.len().max(1));
                let to = (from + 1 + rng.below(16)).min(m.len());
                let slice = m.get(from..to).unwrap_or_default().to_vec();
                m.extend(slice);
            }
        }
    }
    m
}

/// Whether the daemon would take `bytes` as a request that stops it.
fn stops_the_daemon(bytes: &[u8]) -> bool {
    matches!(
        wire::decode_request(bytes, &Limits::default()),
        Ok((_, Request::Shutdown { .. }))
    )
}

/// Whether `bytes` decodes to a session message that ends the hostile
/// client's own session (it would fuzz nothing after that).
fn ends_the_session(bytes: &[u8]) -> bool {
    matches!(session::decode(bytes), Ok(Session::Disconnect { .. }))
}

/// Sends a ping and drops every reply until the ping's own arrives.
fn catch_up(c: &mut RawClient) {
    let id = c.post(
        &Request::Ping {
            len: 0,
            echo: false,
        },
        Vec::new(),
    );
    let inbox = c.inbox.clone();
    c.worker
        .wait_until(deadline(60), "the hostile client's ping", || {
            let mut queue = inbox.borrow_mut();
            let answered = queue.iter().any(|m| {
                m.id() == AM_REPLY
                    && wire::decode_reply(m.header(), &Limits::default())
                        .is_ok_and(|(h, _)| h.request_id == id)
            });
            queue.clear();
            answered
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_daemon_fed_mutated_messages_keeps_serving_a_good_client() {
    let cases = env_u64("LIVE_FUZZ_CASES", 3000);
    let seed = env_u64("LIVE_FUZZ_SEED", 0x5eed_f00d) | 1;
    watchdog(600, move || {
        let mut d = Daemon::start("livefuzz", |_| {});
        let mut good = RawClient::connect(&d.record);
        let mut hostile = RawClient::connect(&d.record);
        let mut rng = Rng(seed);
        let route = Route::new(1, hostile.node_id)
            .on(hostile.channel)
            .with_token(hostile.token);
        let seeds: Vec<Vec<u8>> = seed_requests()
            .iter()
            .map(|r| {
                let mut h = Vec::new();
                wire::encode_request(&mut h, route, r).unwrap();
                h
            })
            .collect();
        let connect = hostile.connect_message([7; NONCE_LEN], now_unix_ns());
        let mut sent = 0u64;
        for case in 0..cases {
            if rng.below(10) == 0 {
                let bytes = mutate(&mut rng, &connect);
                if !ends_the_session(&bytes) {
                    // Half of them ask for a reply endpoint, as clients do.
                    let opts = if rng.below(2) == 0 {
                        SendOptions::default().with_reply()
                    } else {
                        SendOptions::default()
                    };
                    hostile.send_am_with(AM_SESSION, &bytes, Vec::new(), opts);
                    sent += 1;
                }
            } else {
                let which = rng.below(seeds.len());
                let bytes = mutate(&mut rng, &seeds[which]);
                if !stops_the_daemon(&bytes) {
                    let n = rng.below(4) * rng.below(3000);
                    let payload = rng.bytes(n);
                    hostile.send_am(AM_REQUEST, &bytes, payload);
                    sent += 1;
                }
            }
            // Replies to the hostile client are read and dropped (a dropped
            // rendezvous message completes the daemon's send).
            hostile.worker.progress();
            hostile.inbox.borrow_mut().clear();
            hostile.sends.retain(|r| !r.is_done());
            if case % 100 == 99 {
                // The hostile client waits for the daemon to catch up (a
                // ping answered after all it sent), so that what is
                // measured is the daemon's handling, not a backlog.
                catch_up(&mut hostile);
                // The good client is served throughout, byte for byte.
                let n = 1 + rng.below(8192);
                let data = rng.bytes(n);
                let chunk = case / 100;
                let wrote = good.write("@00000000000000cd", chunk, 0, data.clone());
                assert!(matches!(wrote.ok(), Reply::Write { .. }), "case {case}");
                let back = good.read("@00000000000000cd", chunk, 0, data.len() as u64);
                assert_eq!(back.payload, data, "case {case}, seed {seed:#x}");
            }
        }
        hostile.flush_sends();
        good.ping();
        let stats = good.stats();
        assert!(sent > cases * 8 / 10, "{sent} of {cases} cases sent");
        assert!(
            stats["decode_errors"].as_u64().unwrap() > 0,
            "mutations reached the decoders: {stats}"
        );
        good.shutdown(false);
        let summary = d.join();
        assert!(summary.decode_errors > 0);
    });
}
