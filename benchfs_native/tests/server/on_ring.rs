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
        for i in 0..n {
            c.post(
                &Request::Write {
                    path: "dr",
                    chunk: i,
                    offset: 0,
                    len: 65536,
                    sync: false,
                },
                pattern(65536, i),
            );
        }
        c.post(&Request::Shutdown { force: false }, Vec::new());
        let (mut writes, mut shutdown) = (0, false);
        for _ in 0..=n {
            match c.recv().ok() {
                Reply::Write { written } => {
                    assert_eq!(written, 65536);
                    writes += 1;
                }
                Reply::Shutdown => shutdown = true,
                r => panic!("{r:?}"),
            }
        }
        assert_eq!(writes, n);
        assert!(shutdown);
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
