//! A store whose ring the opening thread turns (`ChunkStore::open_driven`,
//! as the daemon's event loop does): its own calls, other threads' calls,
//! and sleeping until the kernel or a request wakes it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use benchfs_native::storage::ChunkStore;
use benchfs_native::storage::store::{Completions, Finished, ReadAnswer};
use benchfs_native::sys::Epoll;
use common::{TempDir, pattern, small_options, small_store, watchdog};

fn driven(dir: &TempDir, pool_buffers: usize) -> ChunkStore {
    ChunkStore::open_driven(dir.path(), small_options(|o| o.pool_buffers = pool_buffers))
        .expect("open a driven store")
}

#[test]
fn only_a_driven_store_has_a_wake_for_its_owner() {
    watchdog(60, || {
        let a = TempDir::new("driven-wake");
        let b = TempDir::new("threaded-wake");
        assert!(driven(&a, 4).driven_wake().is_some());
        let threaded = small_store(b.path(), |_| {});
        assert!(threaded.driven_wake().is_none());
        assert!(!threaded.drive(), "a threaded store has nothing to turn");
    });
}

#[test]
fn the_owners_blocking_calls_turn_the_ring_themselves() {
    watchdog(60, || {
        let dir = TempDir::new("driven-own");
        // Two buffers for a write of five: the call waits for its own
        // pieces' buffers, which only its own turns bring back.
        let s = driven(&dir, 2);
        let data = pattern(5 * 4096 + 123, 1);
        assert_eq!(s.write("f", 10, &data).unwrap(), data.len());
        assert_eq!(s.read("f", 10, data.len() + 50).unwrap(), data);
        assert_eq!(s.stat("f").unwrap(), 10 + data.len() as u64);
        s.truncate("f", 100).unwrap();
        assert_eq!(s.stat("f").unwrap(), 100);
        s.fsync("f").unwrap();
        s.remove("f").unwrap();
        let err = s.stat("f").unwrap_err().to_string();
        assert!(err.contains("No such file"), "{err}");
        let st = s.stats();
        assert_eq!(st.pool_free, st.pool_buffers, "every buffer returned");
        s.close().unwrap();
        assert!(s.write("f", 0, b"x").is_err(), "closed");
    });
}

#[test]
fn other_threads_calls_complete_by_the_owners_turns() {
    watchdog(60, || {
        let dir = TempDir::new("driven-others");
        let s = Arc::new(driven(&dir, 4));
        let done = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..3u64)
            .map(|i| {
                let s = Arc::clone(&s);
                let done = Arc::clone(&done);
                std::thread::spawn(move || {
                    let name = format!("w{i}");
                    let data = pattern(3 * 4096, i);
                    for _ in 0..20 {
                        assert_eq!(s.write(&name, 0, &data).unwrap(), data.len());
                        assert_eq!(s.read(&name, 0, data.len()).unwrap(), data);
                    }
                    done.store(true, Ordering::SeqCst);
                })
            })
            .collect();
        // The owner turns the ring until every worker is through.
        for w in workers {
            while !w.is_finished() {
                s.drive();
                std::thread::yield_now();
            }
            w.join().unwrap();
        }
        assert!(done.load(Ordering::SeqCst));
        s.close().unwrap();
    });
}

/// A driven store in `dir`, shared with other threads, and an epoll
/// watching its eventfd, for its owner to sleep on.
fn sleeping_owner(dir: &TempDir) -> (Arc<ChunkStore>, Epoll) {
    let s = Arc::new(driven(dir, 4));
    let epoll = Epoll::new().unwrap();
    epoll.add(s.driven_wake().unwrap().raw(), 0).unwrap();
    (s, epoll)
}

/// Sleeps on the store's eventfd until it is readable (the watchdog fails
/// a wake-up that never comes), then drains it.
fn sleep_on_wake(s: &ChunkStore, epoll: &Epoll) {
    let wake = s.driven_wake().unwrap();
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 1];
    while epoll.wait(&mut events, Duration::from_secs(30)).unwrap() == 0 {}
    wake.unpark();
}

/// Parks, drains, turns once more, and sleeps only when that did nothing:
/// how the event loop sleeps. Returns the result once it is there.
fn wait_parked(s: &ChunkStore, epoll: &Epoll, to: &Completions) -> Finished {
    loop {
        if let Some(f) = to.try_take() {
            return f;
        }
        let wake = s.driven_wake().unwrap();
        wake.park();
        wake.drain();
        if s.drive() {
            wake.unpark();
            continue;
        }
        sleep_on_wake(s, epoll);
        s.drive();
    }
}

#[test]
fn a_parked_owner_is_woken_by_completions_and_by_requests() {
    watchdog(60, || {
        let dir = TempDir::new("driven-parked");
        let (s, epoll) = sleeping_owner(&dir);
        let to = Completions::new().unwrap();
        let data = pattern(4096, 3);
        s.write("f", 0, &data).unwrap();
        // Started by the owner: in the ring at once, submitted by its next
        // turn; an O_DIRECT read completes later, and its completion
        // writes the eventfd the owner sleeps on.
        for tag in 0..50 {
            s.start_read("f", 0, 4096, Vec::new(), ReadAnswer::Copied, tag, &to)
                .unwrap();
            let f = wait_parked(&s, &epoll, &to);
            assert_eq!((f.tag, f.result.unwrap()), (tag, 4096));
            assert_eq!(f.buf, data);
        }
        // Another thread's call, made while the owner sleeps, wakes it.
        let (go, went) = mpsc::channel::<()>();
        let other = {
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                went.recv().unwrap();
                s.read("f", 0, 4096).unwrap()
            })
        };
        let wake = s.driven_wake().unwrap();
        wake.park();
        wake.drain();
        assert!(!s.drive(), "nothing left to do");
        go.send(()).unwrap();
        sleep_on_wake(&s, &epoll);
        while !other.is_finished() {
            s.drive();
            std::thread::yield_now();
        }
        assert_eq!(other.join().unwrap(), data);
        s.close().unwrap();
    });
}

#[test]
fn another_threads_call_racing_the_owners_sleep_is_never_lost() {
    // A request another thread sends just as the owner parks must be taken
    // by the owner's last turn or wake it (the watchdog fails a lost one).
    watchdog(60, || {
        let dir = TempDir::new("driven-race");
        let (s, epoll) = sleeping_owner(&dir);
        let data = pattern(4096, 5);
        s.write("f", 0, &data).unwrap();
        let (go, went) = mpsc::channel::<()>();
        let (answered, got) = mpsc::channel::<()>();
        let other = {
            let s = Arc::clone(&s);
            let data = data.clone();
            std::thread::spawn(move || {
                while went.recv().is_ok() {
                    assert_eq!(s.read("f", 0, 4096).unwrap(), data);
                    // Told over a channel the owner does not sleep on:
                    // wake it to look.
                    answered.send(()).unwrap();
                    s.driven_wake().unwrap().notify_if_parked();
                }
            })
        };
        let wake = s.driven_wake().unwrap();
        for _ in 0..300 {
            // The read's send races the owner's park: the owner sleeps as
            // the event loop does until the read is answered.
            go.send(()).unwrap();
            loop {
                wake.park();
                wake.drain();
                if s.drive() {
                    wake.unpark();
                    continue;
                }
                if got.try_recv().is_ok() {
                    wake.unpark();
                    break;
                }
                sleep_on_wake(&s, &epoll);
            }
        }
        drop(go);
        other.join().unwrap();
        s.close().unwrap();
    });
}
