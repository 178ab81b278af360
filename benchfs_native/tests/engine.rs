//! Engine invariants: lifetime of buffers across shutdown, queue and pool
//! overflow, direct/buffered choice, ENOSPC, path checks and the trace.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use benchfs_native::Error;
use benchfs_native::storage::buffer::BufferPool;
use benchfs_native::storage::driver::Driver;
use benchfs_native::storage::ops::{Op, Read, Write};
use benchfs_native::storage::store::{Completions, Finished, ReadAnswer};
use benchfs_native::storage::{ChunkStore, Counters, StoreOptions};
use benchfs_native::sys::poll::readable_now;
use benchfs_native::trace::format::{RECORD_SIZE, parse};
use benchfs_native::trace::{Kind, OpCode, TraceConfig};
use common::{TempDir, pattern, small_store, watchdog};

fn open_rw(path: &std::path::Path) -> Arc<OwnedFd> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .expect("open");
    Arc::new(f.into())
}

#[test]
fn dropping_a_driver_with_ops_in_flight_waits_for_their_completions() {
    watchdog(60, || {
        let dir = TempDir::new("drop-driver");
        let path = dir.path().join("f");
        let fd = open_rw(&path);
        let n = 64;
        let pool = BufferPool::new(n, 64 * 1024).unwrap();
        let counters = Arc::new(Counters::default());
        {
            let mut d: Driver<usize> = Driver::new(8, Some(&pool), counters.clone(), None).unwrap();
            for i in 0..n {
                let mut buf = pool.try_acquire().unwrap();
                buf.fill_from(&pattern(64 * 1024, i as u64));
                let op = Op::Write(Write {
                    fd: fd.clone(),
                    offset: (i * 64 * 1024) as u64,
                    buf,
                    buf_offset: 0,
                    len: 64 * 1024,
                    direct: false,
                });
                d.push(op, i, Instant::now());
            }
            // Half of them reach the kernel, the rest stay queued.
            d.submit_and_wait(0).unwrap();
            assert!(d.in_flight() > 0);
            assert_eq!(pool.free_count(), 0);
            // Dropped without reaping.
        }
        // Every buffer came back, only after its operation completed.
        assert_eq!(pool.free_count(), n);
        let submitted = counters.snapshot().sqes as usize;
        assert!(submitted > 0 && submitted <= n);
        let data = std::fs::read(&path).unwrap();
        // Whatever reached the kernel was written completely, in order.
        for i in 0..submitted {
            let chunk = &data[i * 64 * 1024..(i + 1) * 64 * 1024];
            assert_eq!(chunk, &pattern(64 * 1024, i as u64)[..], "block {i}");
        }
    });
}

#[test]
fn more_operations_than_ring_entries_all_complete() {
    watchdog(60, || {
        let dir = TempDir::new("full-sq");
        let path = dir.path().join("f");
        let fd = open_rw(&path);
        let n = 300;
        let pool = BufferPool::new(n, 4096).unwrap();
        let counters = Arc::new(Counters::default());
        let mut d: Driver<usize> = Driver::new(4, Some(&pool), counters.clone(), None).unwrap();
        for i in 0..n {
            let mut buf = pool.try_acquire().unwrap();
            buf.fill_from(&[i as u8; 4096]);
            let op = Op::Write(Write {
                fd: fd.clone(),
                offset: (i * 4096) as u64,
                buf,
                buf_offset: 0,
                len: 4096,
                direct: false,
            });
            d.push(op, i, Instant::now());
        }
        let mut seen = vec![false; n];
        let mut done = Vec::new();
        while d.in_flight() > 0 {
            d.submit_and_wait(1).unwrap();
            d.reap(&mut done);
            for c in done.drain(..) {
                assert_eq!(c.result, 4096);
                assert!(!seen[c.token]);
                seen[c.token] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
        let s = counters.snapshot();
        assert_eq!(s.sqes, n as u64);
        assert_eq!(s.completed_ops, n as u64);
        assert!(s.submits >= (n / 4) as u64, "{s:?}");
        // And read back through the same ring.
        for i in (0..n).step_by(37) {
            let buf = pool.try_acquire().unwrap();
            let op = Op::Read(Read {
                fd: fd.clone(),
                offset: (i * 4096) as u64,
                buf,
                len: 4096,
                direct: false,
            });
            d.push(op, i, Instant::now());
            d.submit_and_wait(1).unwrap();
            while d.reap(&mut done) == 0 {
                d.submit_and_wait(1).unwrap();
            }
            let c = done.pop().unwrap();
            let Op::Read(r) = c.op else {
                panic!("not a read")
            };
            assert_eq!(r.buf.as_slice(), &[i as u8; 4096][..]);
        }
    });
}

#[test]
fn store_splits_large_requests_beyond_the_ring() {
    watchdog(60, || {
        let dir = TempDir::new("big-request");
        let s = small_store(dir.path(), |o| {
            o.ring_entries = 2;
            o.pool_buffers = 64;
        });
        let data = pattern(256 * 1024 + 123, 7);
        assert_eq!(s.write("big", 1000, &data).unwrap(), data.len());
        assert_eq!(s.read("big", 1000, data.len()).unwrap(), data);
        let st = s.stats();
        assert!(st.sqes >= 65, "{st:?}");
        assert_eq!(st.in_flight, 0);
        assert_eq!(st.pool_free, st.pool_buffers);
    });
}

#[test]
fn empty_pool_makes_callers_wait_not_fail() {
    watchdog(60, || {
        let dir = TempDir::new("backpressure");
        let s = Arc::new(small_store(dir.path(), |o| o.pool_buffers = 2));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let s = Arc::clone(&s);
                std::thread::spawn(move || {
                    for k in 0..10u64 {
                        let data = pattern(64 * 1024, t * 100 + k);
                        let path = format!("t{t}/f{k}");
                        assert_eq!(s.write(&path, k * 333, &data).unwrap(), data.len());
                        assert_eq!(s.read(&path, k * 333, data.len()).unwrap(), data);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let st = s.stats();
        assert!(st.pool_waits > 0, "{st:?}");
        assert_eq!(st.pool_free, 2);
        assert_eq!(s.list().unwrap().len(), 80);
    });
}

#[test]
fn close_with_callers_in_flight_completes_or_reports_closed() {
    watchdog(60, || {
        let dir = TempDir::new("close-in-flight");
        let s = Arc::new(small_store(dir.path(), |o| o.pool_buffers = 4));
        let written = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let s = Arc::clone(&s);
                let written = Arc::clone(&written);
                std::thread::spawn(move || {
                    let data = pattern(128 * 1024, t);
                    let mut ok = 0;
                    loop {
                        match s.write(&format!("f{t}"), 0, &data) {
                            Ok(n) => {
                                assert_eq!(n, data.len());
                                ok += 1;
                                written.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(Error::Closed) => return ok,
                            Err(e) => panic!("{e}"),
                        }
                    }
                })
            })
            .collect();
        // Close once the writers are busy (a few writes done), not after a guessed time.
        while written.load(Ordering::Relaxed) < 8 {
            std::thread::yield_now();
        }
        s.close().unwrap();
        let total: u32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert!(total > 0);
        let st = s.stats();
        assert_eq!(
            st.pool_free, st.pool_buffers,
            "every buffer returned: {st:?}"
        );
        assert_eq!(st.in_flight, 0);
        assert!(matches!(s.read("f0", 0, 1), Err(Error::Closed)));
        s.close().unwrap();
    });
}

#[test]
fn misaligned_io_is_buffered_and_aligned_io_is_direct() {
    watchdog(60, || {
        let dir = TempDir::new("direct");
        let s = small_store(dir.path(), |_| {});
        let Some(align) = s.dio_alignment() else {
            eprintln!(
                "no O_DIRECT on {}: only the buffered half is checked",
                dir.path().display()
            );
            s.write("m", 3, b"abc").unwrap();
            assert_eq!(s.stats().buffered_ops, 1);
            return;
        };
        assert!(align.offset <= 4096);
        let before = s.stats();
        s.write("a", 0, &pattern(8192, 1)).unwrap();
        let st = s.stats();
        assert_eq!(st.direct_ops - before.direct_ops, 2, "{st:?}");
        assert_eq!(st.buffered_ops, before.buffered_ops);
        s.write("a", 8192 + 3, b"misaligned").unwrap();
        let st2 = s.stats();
        assert_eq!(st2.buffered_ops - st.buffered_ops, 1, "{st2:?}");
        s.read("a", 0, 4096).unwrap();
        assert_eq!(s.stats().direct_ops - st2.direct_ops, 1);
        assert_eq!(&s.read("a", 8195, 10).unwrap(), b"misaligned");
        // buffered=True never uses O_DIRECT.
        let s2 = small_store(dir.path(), |o| o.buffered = true);
        s2.write("b", 0, &pattern(8192, 2)).unwrap();
        assert_eq!(s2.stats().direct_ops, 0);
        assert_eq!(s2.stats().buffered_ops, 2);
    });
}

#[test]
fn escaping_paths_are_rejected_with_the_path() {
    // The store one level down, so that its parent is ours alone.
    let dir = TempDir::new("paths");
    let s = small_store(&dir.path().join("store"), |_| {});
    for p in [
        "../x",
        "/etc/passwd",
        "a/../../b",
        "",
        "a\0b",
        "a//b",
        "./a",
    ] {
        match s.write(p, 0, b"x") {
            Err(Error::InvalidPath { path, .. }) => assert_eq!(path, p),
            other => panic!("{p:?}: {other:?}"),
        }
        assert!(matches!(s.read(p, 0, 1), Err(Error::InvalidPath { .. })));
        assert!(matches!(s.stat(p), Err(Error::InvalidPath { .. })));
    }
    // Nothing was created outside (or inside) the store.
    assert!(s.list().unwrap().is_empty());
    assert!(!dir.path().join("x").exists());
    assert!(!dir.path().join("b").exists());
}

#[test]
fn file_operations_and_errnos() {
    watchdog(60, || {
        let dir = TempDir::new("ops");
        let s = small_store(dir.path(), |_| {});
        assert_eq!(
            s.read("nope", 0, 10).unwrap_err().errno(),
            Some(libc::ENOENT)
        );
        assert_eq!(s.stat("nope").unwrap_err().errno(), Some(libc::ENOENT));
        assert_eq!(s.remove("nope").unwrap_err().errno(), Some(libc::ENOENT));
        assert_eq!(
            s.truncate("nope", 1).unwrap_err().errno(),
            Some(libc::ENOENT)
        );
        assert_eq!(s.fsync("nope").unwrap_err().errno(), Some(libc::ENOENT));
        // Empty write creates; holes read as zeros; short read at EOF.
        assert_eq!(s.write("e", 0, b"").unwrap(), 0);
        assert_eq!(s.stat("e").unwrap(), 0);
        assert_eq!(s.read("e", 0, 0).unwrap(), b"");
        s.write("h", 40_000, b"tail").unwrap();
        let d = s.read("h", 0, 100_000).unwrap();
        assert_eq!(d.len(), 40_004);
        assert!(d[..40_000].iter().all(|&b| b == 0));
        assert_eq!(&d[40_000..], b"tail");
        assert_eq!(s.read("h", 50_000, 10).unwrap(), b"");
        s.truncate("h", 10).unwrap();
        assert_eq!(s.stat("h").unwrap(), 10);
        s.truncate("h", 1 << 20).unwrap();
        assert_eq!(s.stat("h").unwrap(), 1 << 20);
        s.fsync("h").unwrap();
        assert_eq!(s.list().unwrap(), vec!["e".to_owned(), "h".to_owned()]);
        s.remove("h").unwrap();
        assert_eq!(s.list().unwrap(), vec!["e".to_owned()]);
        assert!(matches!(
            s.read("e", 0, (1 << 30) + 1),
            Err(Error::InvalidArgument { name: "length", .. })
        ));
        assert!(matches!(
            s.write("e", u64::MAX - 2, b"xyz"),
            Err(Error::InvalidArgument { name: "offset", .. })
        ));
    });
}

#[test]
fn bad_options_name_the_option() {
    let dir = TempDir::new("opts");
    let name = |f: fn(&mut StoreOptions)| {
        let mut o = StoreOptions::default();
        f(&mut o);
        match ChunkStore::open(dir.path(), o) {
            Err(Error::InvalidArgument { name, .. }) => name,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(name(|o| o.chunk_size = 1000), "chunk_size");
    assert_eq!(name(|o| o.chunk_size = 0), "chunk_size");
    assert_eq!(name(|o| o.buffer_size = 100), "buffer_size");
    assert_eq!(name(|o| o.pool_buffers = 0), "pool_buffers");
    assert_eq!(name(|o| o.ring_entries = 0), "ring_entries");
}

#[test]
fn reopen_after_close_sees_the_data() {
    let dir = TempDir::new("reopen");
    let data = pattern(100_000, 5);
    {
        let s = small_store(dir.path(), |_| {});
        s.write("x/y", 12_345, &data).unwrap();
        s.close().unwrap();
    }
    let s = small_store(dir.path(), |o| o.chunk_size = 16 * 1024);
    assert_eq!(s.read("x/y", 12_345, data.len()).unwrap(), data);
    assert_eq!(s.stat("x/y").unwrap(), 12_345 + data.len() as u64);
    assert_eq!(s.list().unwrap(), vec!["x/y".to_owned()]);
    // One flat backing file, no directories.
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(entries.len(), 1);
}

#[test]
fn trace_header_and_records_parse_back() {
    watchdog(60, || {
        let dir = TempDir::new("trace");
        let tdir = dir.path().join("trace");
        let s = small_store(&dir.path().join("store"), |o| {
            o.trace = Some(TraceConfig {
                dir: tdir.clone(),
                node: "node07".into(),
                node_id: 7,
            });
        });
        let writes = 20;
        for i in 0..writes {
            // Each write is one piece (inside one chunk, one buffer).
            s.write("t", i * 4096, &pattern(4096, i)).unwrap();
        }
        for i in 0..writes {
            s.read("t", i * 4096, 100).unwrap();
        }
        s.stat("t").unwrap();
        let _ = s.read("missing", 0, 1);
        s.fsync("t").unwrap();
        let path = s.trace_path().unwrap().to_path_buf();
        s.close().unwrap();
        assert_eq!(
            path.file_name().unwrap().to_str().unwrap(),
            format!("trace-node07-{}.bftrace", std::process::id())
        );
        let bytes = std::fs::read(&path).unwrap();
        let p = parse(&bytes).unwrap();
        assert_eq!((bytes.len() - 16 - p.header_json.len()) % RECORD_SIZE, 0);
        for needle in [
            "\"format\": \"benchfs-trace\"",
            "\"version\": 1",
            "\"record_size\": 48",
            "\"node\": \"node07\"",
            "\"node_id\": 7",
            "\"process\": \"store\"",
            "\"1\": {\"name\": \"storage_op\", \"d0\": \"latency_ns\", \"d1\": \"queue_ns\", \"d2\": \"offset\"}",
            "\"13\": \"shutdown\"",
        ] {
            assert!(
                p.header_json.contains(needle),
                "{needle} in {}",
                p.header_json
            );
        }
        let ops: Vec<_> = p
            .records
            .iter()
            .filter(|r| r.kind == Kind::StorageOp as u8)
            .collect();
        let submits: Vec<_> = p
            .records
            .iter()
            .filter(|r| r.kind == Kind::Submit as u8)
            .collect();
        let count = |op: OpCode| ops.iter().filter(|r| r.op == op as u8).count() as u64;
        assert_eq!(count(OpCode::Write), writes);
        assert_eq!(count(OpCode::Read), writes);
        assert_eq!(count(OpCode::Stat), 1);
        assert_eq!(count(OpCode::Fsync), 1);
        assert_eq!(ops.len() as u64, 2 * writes + 2);
        // The failed open of "missing" never reached the ring.
        assert_eq!(submits.iter().map(|r| r.d0).sum::<u64>(), ops.len() as u64);
        assert!(ops.iter().all(|r| r.node == 7 && r.status == 0 && r.d0 > 0));
        let write_bytes: u64 = ops
            .iter()
            .filter(|r| r.op == OpCode::Write as u8)
            .map(|r| r.bytes)
            .sum();
        assert_eq!(write_bytes, writes * 4096);
        let offsets: Vec<u64> = ops
            .iter()
            .filter(|r| r.op == OpCode::Write as u8)
            .map(|r| r.d2)
            .collect();
        assert_eq!(offsets, (0..writes).map(|i| i * 4096).collect::<Vec<_>>());
        assert!(p.records.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
    });
}

/// The next result on `to`, spinning (the watchdog bounds it).
fn next_finished(to: &Completions) -> Finished {
    loop {
        if let Some(f) = to.try_take() {
            return f;
        }
        std::thread::yield_now();
    }
}

#[test]
fn started_requests_answer_on_their_channel_and_wake_it_when_parked() {
    watchdog(60, || {
        let dir = TempDir::new("started");
        let s = small_store(dir.path(), |o| o.pool_buffers = 2);
        let to = Completions::new().unwrap();
        let data = pattern(3000, 5);
        // Parked: the driver thread writes the eventfd after the result.
        to.wake().park();
        s.start_write("a", 100, data.clone(), false, 7, &to)
            .unwrap();
        while !readable_now(to.wake().raw()) {
            std::thread::yield_now();
        }
        let f = to.try_take().expect("a result before the wake-up");
        to.wake().unpark();
        assert!(!readable_now(to.wake().raw()), "unpark drains the eventfd");
        assert_eq!((f.tag, f.result.unwrap()), (7, 3000));
        assert_eq!(f.buf, data, "a write's data comes back as given");
        // Awake: no wake-up, the result is on the channel. A read past the
        // end of the file comes back short.
        s.start_read("a", 100, 4000, Vec::new(), ReadAnswer::Copied, 8, &to)
            .unwrap();
        let f = next_finished(&to);
        assert_eq!((f.tag, f.result.unwrap()), (8, 3000));
        assert_eq!(f.buf, data);
        assert!(!readable_now(to.wake().raw()));
        // Errors as the blocking call words them.
        s.start_read("none", 0, 10, Vec::new(), ReadAnswer::Copied, 9, &to)
            .unwrap();
        let f = next_finished(&to);
        match f.result {
            Err(Error::Os { errno, op, path }) => {
                assert_eq!((errno, op, path.as_str()), (libc::ENOENT, "read", "none"));
            }
            r => panic!("{r:?}"),
        }
        // Not started, the data given back whole: more than one buffer,
        // across a chunk border, empty, a bad path.
        let five = pattern(5000, 6);
        assert_eq!(
            s.start_write("b", 0, five.clone(), false, 1, &to),
            Err(five)
        );
        let two = pattern(200, 7);
        let border = 16 * 1024 - 100;
        assert_eq!(
            s.start_write("b", border, two.clone(), false, 1, &to),
            Err(two)
        );
        assert_eq!(
            s.start_write("b", 0, Vec::new(), false, 1, &to),
            Err(Vec::new())
        );
        assert!(
            s.start_read("../x", 0, 10, Vec::new(), ReadAnswer::Copied, 1, &to)
                .is_err()
        );
        assert!(
            s.start_read("b", 0, 5000, Vec::new(), ReadAnswer::Copied, 1, &to)
                .is_err()
        );
        let st = s.stats();
        assert_eq!(st.pool_free, st.pool_buffers, "every buffer returned");
        // A closed store starts nothing.
        s.close().unwrap();
        let one = pattern(100, 8);
        assert_eq!(s.start_write("a", 0, one.clone(), false, 1, &to), Err(one));
        assert!(to.try_take().is_none(), "nothing answered twice");
    });
}

#[test]
fn started_requests_in_registered_buffers_move_no_bytes_through_the_caller() {
    watchdog(60, || {
        let dir = TempDir::new("started-fixed");
        let s = small_store(dir.path(), |o| o.pool_buffers = 2);
        let to = Completions::new().unwrap();
        let data = pattern(3000, 13);
        // A write received into a buffer from `write_buf` is written from it.
        let mut buf = s.write_buf("f", 100, 3000).expect("a free buffer");
        buf.fill_from(&data);
        s.start_write_fixed("f", 100, buf, false, 4, &to).unwrap();
        let f = next_finished(&to);
        assert_eq!((f.tag, f.result.unwrap()), (4, 3000));
        assert!(f.fixed.is_none() && f.buf.is_empty());
        assert_eq!(s.read("f", 100, 3000).unwrap(), data);
        // A read answers with its registered buffer: short at the end of
        // the file, a hole before the data as zeros.
        s.start_read("f", 0, 4000, Vec::new(), ReadAnswer::Registered, 5, &to)
            .unwrap();
        let f = next_finished(&to);
        assert_eq!((f.tag, f.result.unwrap()), (5, 3100));
        let fixed = f.fixed.expect("the data in its registered buffer");
        let mut want = vec![0u8; 100];
        want.extend_from_slice(&data);
        assert_eq!(fixed.as_slice(), &want[..]);
        assert_eq!(s.stats().pool_free, 1, "held until the caller drops it");
        drop(fixed);
        // A failed read hands back no buffer.
        s.start_read("none", 0, 10, Vec::new(), ReadAnswer::Registered, 6, &to)
            .unwrap();
        assert!(next_finished(&to).fixed.is_none());
        // No buffer for what would not start: empty, across a chunk
        // border, more than one buffer, a bad path.
        assert!(s.write_buf("f", 0, 0).is_none());
        assert!(s.write_buf("f", 16 * 1024 - 100, 200).is_none());
        assert!(s.write_buf("f", 0, 5000).is_none());
        assert!(s.write_buf("../x", 0, 10).is_none());
        // A closed store gives the data back.
        let buf = s.write_buf("f", 0, 10).expect("a free buffer");
        s.close().unwrap();
        let back = s.start_write_fixed("f", 0, buf, false, 7, &to).unwrap_err();
        drop(back);
        assert_eq!(s.stats().pool_free, s.stats().pool_buffers);
        assert!(to.try_take().is_none(), "nothing answered twice");
    });
}

#[test]
fn a_started_synced_write_is_followed_by_its_fsync() {
    watchdog(60, || {
        let dir = TempDir::new("started-sync");
        let s = small_store(dir.path(), |_| {});
        let to = Completions::new().unwrap();
        let data = pattern(4096, 9);
        let ops0 = s.stats().completed_ops;
        s.start_write("s", 0, data.clone(), true, 3, &to).unwrap();
        let f = next_finished(&to);
        assert_eq!((f.tag, f.result.unwrap()), (3, 4096));
        assert_eq!(
            s.stats().completed_ops - ops0,
            2,
            "the write, then its fsync"
        );
        assert_eq!(s.read("s", 0, 4096).unwrap(), data);
    });
}
