//! The ring and the pool at their limits: more operations than ring
//! entries, requests beyond the ring, an empty pool, and shutdown or close
//! with work in flight.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use benchfs_native::Error;
use benchfs_native::storage::Counters;
use benchfs_native::storage::buffer::BufferPool;
use benchfs_native::storage::driver::Driver;
use benchfs_native::storage::ops::{Op, Read, Write};

use crate::common::{TempDir, pattern, small_store, watchdog};

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
