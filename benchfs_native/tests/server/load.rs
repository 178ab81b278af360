//! A load against an external daemon, for measurements by hand.

use crate::harness::*;

/// A 1 MiB write-then-read load against a running daemon (found through
/// `BENCHFS_LOAD_REGISTRY`), for measurements by hand:
/// `BENCHFS_LOAD_REGISTRY=DIR cargo test --release --test server -- --ignored load`.
/// `BENCHFS_LOAD_MIB` (default 1024) and `BENCHFS_LOAD_DEPTH` (default 8).
#[test]
#[ignore = "drives an external daemon; run by hand"]
fn load_against_a_running_daemon() {
    let Ok(dir) = std::env::var("BENCHFS_LOAD_REGISTRY") else {
        panic!("BENCHFS_LOAD_REGISTRY is not set: name the registry directory of a running daemon");
    };
    let env_num = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let total = env_num("BENCHFS_LOAD_MIB", 1024);
    let depth = env_num("BENCHFS_LOAD_DEPTH", 8);
    watchdog(600, move || {
        let records = membership::wait_for(
            std::path::Path::new(&dir),
            &Expected::Count(1),
            deadline(30),
        )
        .unwrap();
        let mut c = RawClient::connect(&records[0]);
        // Round trips, one at a time: ping (no storage) and 4 KiB reads.
        let lat = |c: &mut RawClient, what: &str, n: usize, req: &Request<'_>| {
            let mut v: Vec<f64> = (0..n)
                .map(|_| {
                    let t = Instant::now();
                    c.call(req, Vec::new()).ok();
                    t.elapsed().as_secs_f64() * 1e6
                })
                .collect();
            v.sort_by(f64::total_cmp);
            eprintln!(
                "load {what}: {n} round trips, p50 {:.1} us, p99 {:.1} us",
                v[n / 2],
                v[n * 99 / 100]
            );
        };
        lat(
            &mut c,
            "ping",
            20_000,
            &Request::Ping {
                len: 0,
                echo: false,
            },
        );
        let small = pattern(4096, 1);
        c.write("lat", 0, 0, small.clone()).ok();
        let read4k = Request::Read {
            path: "lat",
            chunk: 0,
            offset: 0,
            len: 4096,
        };
        lat(&mut c, "read 4 KiB", 20_000, &read4k);
        assert!(
            c.call(&read4k, Vec::new()).payload == small,
            "4 KiB read back differs"
        );
        let per_chunk = c.chunk_size / MIB as u64;
        let data = pattern(MIB, 42);
        let place = |i: u64| (i / per_chunk, (i % per_chunk) * MIB as u64);
        for phase in ["write", "read"] {
            let start = Instant::now();
            let (mut posted, mut done) = (0u64, 0u64);
            while done < total {
                while posted < total && posted - done < depth {
                    let (chunk, offset) = place(posted);
                    if phase == "write" {
                        let req = Request::Write {
                            path: "load",
                            chunk,
                            offset,
                            len: MIB as u64,
                            sync: false,
                        };
                        c.post(&req, data.clone());
                    } else {
                        let req = Request::Read {
                            path: "load",
                            chunk,
                            offset,
                            len: MIB as u64,
                        };
                        c.post(&req, Vec::new());
                    }
                    posted += 1;
                }
                let got = c.recv();
                match got.ok() {
                    Reply::Write { written } => assert_eq!(written, MIB as u64),
                    Reply::Read { len } => {
                        assert_eq!(len, MIB as u64);
                        assert!(got.payload == data);
                    }
                    r => panic!("{r:?}"),
                }
                done += 1;
            }
            let s = start.elapsed().as_secs_f64();
            eprintln!(
                "load {phase}: {total} x 1 MiB, {depth} in flight: {:.3} s, {:.0} MiB/s",
                s,
                total as f64 / s
            );
        }
        let stats = c.stats();
        eprintln!("daemon stats: {stats}");
        c.disconnect();
    });
}
