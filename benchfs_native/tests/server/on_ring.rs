//! Data requests the event loop starts on the store's ring itself (synced
//! writes with their fsync), and the ones that still go to a storage
//! thread (several store buffers): same bytes, same errors, same drain.

use crate::harness::*;

fn on_ring(c: &mut RawClient) -> u64 {
    c.stats()["data_on_ring"].as_u64().unwrap()
}

#[test]
fn small_reads_and_writes_run_on_the_ring_byte_for_byte() {
    watchdog(120, || {
        let mut d = Daemon::start("ring-small", |_| {});
        let mut c = RawClient::connect(&d.record);
        let before = on_ring(&mut c);
        let data = pattern(4096, 11);
        match c.write("r/a", 1, 8192, data.clone()).ok() {
            Reply::Write { written } => assert_eq!(written, 4096),
            r => panic!("{r:?}"),
        }
        assert_eq!(c.read("r/a", 1, 8192, 4096).payload, data);
        // Unaligned, and a read past the end comes back short.
        let odd = pattern(1000, 12);
        c.write("r/a", 1, 12_289, odd.clone()).ok();
        let got = c.read("r/a", 1, 12_289, 5000);
        assert!(matches!(got.ok(), Reply::Read { len } if len == 1000));
        assert_eq!(got.payload, odd);
        // A hole reads as zeros.
        assert_eq!(c.read("r/a", 1, 0, 8192).payload, vec![0; 8192]);
        assert_eq!(on_ring(&mut c) - before, 5, "every request on the ring");
        // Errors keep their words: a missing file.
        let missing = c.read("r/none", 3, 0, 4096);
        assert_eq!(missing.errno(), libc::ENOENT);
        assert_eq!(
            missing.message(),
            "read r/none chunk 3: No such file or directory"
        );
        let s = c.stats();
        assert_eq!(s["errors"]["read"], 1, "{s}");
        c.shutdown(false);
        assert!(d.join().drained);
    });
}

#[test]
fn a_request_of_several_store_buffers_goes_to_a_storage_thread() {
    watchdog(120, || {
        // Store buffers of 1 MiB: 3 MiB at 512 KiB are four pieces.
        let mut d = Daemon::start("ring-multi", |_| {});
        let mut c = RawClient::connect(&d.record);
        let big = pattern(3 * MIB, 21);
        let before = on_ring(&mut c);
        c.write("m", 0, MIB as u64 / 2, big.clone()).ok();
        let got = c.read("m", 0, MIB as u64 / 2, 3 * MIB as u64);
        assert!(got.payload == big, "multi-piece read differs");
        assert_eq!(on_ring(&mut c), before, "both went to a storage thread");
        // A small write on the ring inside it, seen by a multi-piece read.
        let small = pattern(4096, 22);
        c.write("m", 0, 2 * MIB as u64, small.clone()).ok();
        assert_eq!(on_ring(&mut c), before + 1);
        let mut want = big;
        let at = 2 * MIB - MIB / 2;
        want[at..at + 4096].copy_from_slice(&small);
        assert!(c.read("m", 0, MIB as u64 / 2, 3 * MIB as u64).payload == want);
        // The bytes on disk, at chunk * chunk_size + offset.
        let disk = std::fs::read(d.data_dir.join("m")).unwrap();
        assert!(disk[MIB / 2..] == want[..], "backing file differs");
        c.shutdown(false);
        d.join();
    });
}

fn store_ops(c: &mut RawClient) -> u64 {
    c.stats()["store"]["completed_ops"].as_u64().unwrap()
}

#[test]
fn synced_writes_run_on_the_ring_with_their_fsync() {
    watchdog(120, || {
        let mut d = Daemon::start("ring-sync", |_| {});
        let mut c = RawClient::connect(&d.record);
        let (ring0, ops0) = (on_ring(&mut c), store_ops(&mut c));
        c.write("s", 0, 0, pattern(4096, 30)).ok();
        assert_eq!(store_ops(&mut c) - ops0, 1, "a plain write: one operation");
        let sync = Request::Write {
            path: "s",
            chunk: 0,
            offset: 4096,
            len: 4096,
            sync: true,
        };
        let ops1 = store_ops(&mut c);
        match c.call(&sync, pattern(4096, 31)).ok() {
            Reply::Write { written } => assert_eq!(written, 4096),
            r => panic!("{r:?}"),
        }
        assert_eq!(store_ops(&mut c) - ops1, 2, "the write, then its fsync");
        assert_eq!(on_ring(&mut c) - ring0, 2);
        assert_eq!(c.read("s", 0, 4096, 4096).payload, pattern(4096, 31));
        c.shutdown(false);
        d.join();
    });
}

#[test]
fn fsync_each_write_syncs_every_write_on_the_ring() {
    watchdog(120, || {
        let mut d = Daemon::start("ring-each", |c| {
            c.durability = Durability::FsyncEachWrite;
        });
        let mut c = RawClient::connect(&d.record);
        let (ring0, ops0) = (on_ring(&mut c), store_ops(&mut c));
        c.write("e", 2, 0, pattern(8192, 32)).ok();
        assert_eq!(store_ops(&mut c) - ops0, 2, "the write, then its fsync");
        assert_eq!(on_ring(&mut c) - ring0, 1);
        assert_eq!(c.read("e", 2, 0, 8192).payload, pattern(8192, 32));
        c.shutdown(false);
        d.join();
    });
}

#[test]
fn a_stop_with_ring_requests_in_flight_answers_every_one() {
    watchdog(120, || {
        let mut d = Daemon::start("ring-drain", |c| c.max_concurrency = 2);
        let mut c = RawClient::connect(&d.record);
        let n = 32u64;
        c.writes_then_shutdown("dr", n, false);
        let s = d.join();
        assert!(s.drained);
        // Every write reached the disk before the daemon returned.
        let disk = std::fs::read(d.data_dir.join("dr")).unwrap();
        let chunk = 4 << 20;
        for i in 0..n as usize {
            let got = &disk[i * chunk..i * chunk + 65536];
            assert!(got == &pattern(65536, i as u64)[..], "chunk {i} differs");
        }
    });
}

#[test]
fn a_forced_stop_with_ring_requests_in_flight_answers_or_refuses_each() {
    watchdog(120, || {
        let mut d = Daemon::start("ring-force", |c| c.max_concurrency = 1);
        let mut c = RawClient::connect(&d.record);
        c.write("fr", 0, 0, pattern(65536, 40)).ok();
        let n = 24u64;
        for _ in 0..n {
            c.post(
                &Request::Read {
                    path: "fr",
                    chunk: 0,
                    offset: 0,
                    len: 65536,
                },
                Vec::new(),
            );
        }
        c.post(&Request::Shutdown { force: true }, Vec::new());
        let (mut ok, mut refused) = (0, 0);
        for _ in 0..=n {
            let got = c.recv();
            match got.reply().1 {
                Reply::Read { len } => {
                    assert_eq!(len, 65536);
                    assert!(got.payload == pattern(65536, 40));
                    ok += 1;
                }
                Reply::Error { errno, .. } => {
                    assert_eq!(errno, libc::ESHUTDOWN);
                    refused += 1;
                }
                Reply::Shutdown => {}
                r => panic!("{r:?}"),
            }
        }
        assert_eq!(ok + refused, n);
        let s = d.join();
        assert!(s.forced);
        assert!(s.drained, "the reads in flight were answered");
        assert_eq!(s.refused_stopping, refused);
    });
}

fn direct_ops(c: &mut RawClient) -> u64 {
    c.stats()["store"]["direct_ops"].as_u64().unwrap()
}

/// 1 MiB writes and reads on the ring, received into and sent from the
/// store's registered buffers: aligned (O_DIRECT unless `buffered`), at odd
/// offsets and lengths, short at the end of the file, over a hole; the
/// bytes on disk as written.
fn one_mib_byte_for_byte(tag: &str, buffered: bool) {
    let mut d = Daemon::start(tag, |c| c.buffered = buffered);
    let mut c = RawClient::connect(&d.record);
    let (ring0, direct0) = (on_ring(&mut c), direct_ops(&mut c));
    let chunk = 4 * MIB as u64;
    let mut want = vec![0u8; 4 * MIB];
    let mut put = |c: &mut RawClient, at: usize, data: Vec<u8>| {
        match c.write("z", 0, at as u64, data.clone()).ok() {
            Reply::Write { written } => assert_eq!(written, data.len() as u64),
            r => panic!("{r:?}"),
        }
        want[at..at + data.len()].copy_from_slice(&data);
    };
    // Aligned: 1 MiB at 1 MiB.
    put(&mut c, MIB, pattern(MIB, 50));
    assert!(c.read("z", 0, MIB as u64, MIB as u64).payload == pattern(MIB, 50));
    let aligned_direct = direct_ops(&mut c) - direct0;
    if buffered {
        assert_eq!(aligned_direct, 0, "a buffered store never uses O_DIRECT");
    } else {
        assert_eq!(aligned_direct, 2, "the aligned write and read use O_DIRECT");
    }
    // Odd offset and length, overlapping the aligned data.
    put(&mut c, MIB + 4097, pattern(MIB - 3, 51));
    put(&mut c, 2 * MIB + 12_345, pattern(MIB - 4099, 52));
    let end = 3 * MIB + 12_345 - 4099;
    for (at, len) in [
        (MIB + 4097, MIB - 3),
        (MIB - 1, MIB),
        (2 * MIB + 511, MIB - 1),
    ] {
        let got = c.read("z", 0, at as u64, len as u64);
        assert!(
            got.payload == want[at..at + len],
            "read at {at} of {len} differs"
        );
    }
    // Short at the end of the file: the bytes up to it.
    let got = c.read("z", 0, (end - 1000) as u64, (MIB - 10_000) as u64);
    assert!(matches!(got.ok(), Reply::Read { len } if len == 1000));
    assert!(got.payload == want[end - 1000..end]);
    // A hole (never written) reads as zeros, alone and next to data.
    assert!(c.read("z", 0, 0, MIB as u64).payload == vec![0u8; MIB]);
    let got = c.read("z", 0, (MIB / 2 + 7) as u64, MIB as u64);
    assert!(got.payload == want[MIB / 2 + 7..MIB / 2 + 7 + MIB]);
    assert_eq!(on_ring(&mut c) - ring0, 10, "every request on the ring");
    let disk = std::fs::read(d.data_dir.join("z")).unwrap();
    assert_eq!(disk.len(), end);
    assert!(disk[..] == want[..end], "backing file differs");
    assert!(end as u64 <= chunk);
    let s = c.stats();
    assert_eq!(s["store"]["pool_free"], s["store"]["pool_buffers"], "{s}");
    c.shutdown(false);
    assert!(d.join().drained);
}

#[test]
fn one_mib_requests_on_the_ring_byte_for_byte_with_o_direct() {
    watchdog(120, || one_mib_byte_for_byte("ring-mib-direct", false));
}

#[test]
fn one_mib_requests_on_the_ring_byte_for_byte_buffered() {
    watchdog(120, || one_mib_byte_for_byte("ring-mib-buffered", true));
}

#[test]
fn writes_beyond_the_free_registered_buffers_keep_their_bytes() {
    watchdog(120, || {
        // Two store buffers, four slots: some writes find none free at
        // dispatch and are received into a pool vector instead.
        let mut d = Daemon::start("ring-few", |c| {
            c.buffer_pool_size = 2 * MIB as u64;
            c.max_concurrency = 4;
        });
        let mut c = RawClient::connect(&d.record);
        let n = 12u64;
        for i in 0..n {
            c.post(
                &Request::Write {
                    path: "few",
                    chunk: i,
                    offset: 3,
                    len: MIB as u64 - 3,
                    sync: false,
                },
                pattern(MIB - 3, 60 + i),
            );
        }
        for _ in 0..n {
            match c.recv().ok() {
                Reply::Write { written } => assert_eq!(written, MIB as u64 - 3),
                r => panic!("{r:?}"),
            }
        }
        let mut ids = std::collections::HashMap::new();
        for i in 0..n {
            let id = c.post(
                &Request::Read {
                    path: "few",
                    chunk: i,
                    offset: 3,
                    len: MIB as u64 - 3,
                },
                Vec::new(),
            );
            ids.insert(id, i);
        }
        for _ in 0..n {
            let got = c.recv();
            assert!(matches!(got.ok(), Reply::Read { len } if len == MIB as u64 - 3));
            let i = ids.remove(&got.request_id()).expect("a read's reply, once");
            assert!(got.payload == pattern(MIB - 3, 60 + i), "chunk {i} differs");
        }
        let s = c.stats();
        assert_eq!(s["store"]["pool_free"], s["store"]["pool_buffers"], "{s}");
        c.shutdown(false);
        assert!(d.join().drained);
    });
}
