//! Park and wake: how a thread that sleeps in epoll is woken by threads
//! sending it results over a channel, without a system call per result
//! while it is awake.
//!
//! The sleeper, before sleeping, calls [`ParkWake::park`] and then looks
//! at its channel once more; it sleeps only if that finds nothing, and
//! calls [`ParkWake::unpark`] when it wakes. A sender, after sending,
//! calls [`ParkWake::notify_if_parked`], which writes the eventfd only
//! when the flag is set.
//!
//! Why no wake-up is lost: the sleeper stores `parked` and then fences;
//! a sender sends and then fences. SeqCst fences fall in one total order.
//! If the sleeper's fence comes first, the sender's load after its own
//! fence sees `parked` set and writes the eventfd; if the sender's fence
//! comes first, the sleeper's look at the channel after its fence sees
//! the result. Either way the result is seen or the eventfd is readable.
//! A sender that saw `parked` just before `unpark` cleared it may write
//! the eventfd after the drain: one spurious wake-up, never a lost one.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering, fence};

use super::eventfd::EventFd;

/// An eventfd and the flag saying its owner sleeps on it.
#[derive(Debug)]
pub struct ParkWake {
    fd: EventFd,
    parked: AtomicBool,
}

impl ParkWake {
    /// Awake, the eventfd not readable.
    pub fn new() -> io::Result<ParkWake> {
        Ok(ParkWake {
            fd: EventFd::new()?,
            parked: AtomicBool::new(false),
        })
    }

    /// The eventfd to sleep on (epoll), readable after a notify while
    /// parked.
    pub fn raw(&self) -> RawFd {
        self.fd.raw()
    }

    /// Announces that the owner is about to sleep. Look for results once
    /// more after this, then sleep.
    pub fn park(&self) {
        self.parked.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// The owner is awake again: senders stop writing the eventfd, and
    /// what they wrote is drained.
    pub fn unpark(&self) {
        self.awake();
        self.drain();
    }

    /// The owner is awake again, its eventfd left as it is: for an owner
    /// that polls the eventfd through io_uring and drains it only when
    /// that poll fired, saving a read per wake-up.
    pub fn awake(&self) {
        self.parked.store(false, Ordering::SeqCst);
    }

    /// Empties the eventfd.
    pub fn drain(&self) {
        self.fd.drain();
    }

    /// Called by a sender after its result is sent: wakes the owner if it
    /// is parked.
    pub fn notify_if_parked(&self) {
        fence(Ordering::SeqCst);
        if self.parked.load(Ordering::SeqCst) {
            self.fd.notify();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::sys::{Epoll, readable_now};

    /// Far longer than any wake-up takes: only a lost one reaches it.
    const HANG: Duration = Duration::from_secs(30);

    /// Sleeps on `epoll` until its eventfd is readable; fails the test
    /// when the wake-up never comes.
    fn sleep_until_woken(epoll: &Epoll, round: u64) {
        let deadline = Instant::now() + HANG;
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 1];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            // 0 events: a signal interrupted the wait, or the deadline passed.
            if epoll.wait(&mut events, left).expect("epoll wait") > 0 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "round {round}: the result was neither seen nor woke the eventfd"
            );
        }
    }

    #[test]
    fn every_result_is_seen_on_the_recheck_or_wakes_the_eventfd() {
        const ROUNDS: u64 = 20_000;
        let wake = Arc::new(ParkWake::new().expect("eventfd"));
        let epoll = Epoll::new().expect("epoll");
        epoll.add(wake.raw(), 0).expect("epoll add");
        let (go_tx, go_rx) = mpsc::channel::<u64>();
        let (result_tx, result_rx) = mpsc::channel::<u64>();
        let sender_wake = Arc::clone(&wake);
        let sender = std::thread::spawn(move || {
            for round in go_rx {
                if result_tx.send(round).is_err() {
                    return;
                }
                sender_wake.notify_if_parked();
            }
        });
        for round in 0..ROUNDS {
            // The sender's send races the park in every round.
            go_tx.send(round).expect("sender alive");
            let got = loop {
                wake.park();
                let seen = result_rx.try_recv().ok();
                if seen.is_none() {
                    sleep_until_woken(&epoll, round);
                }
                wake.unpark();
                // Nothing after a wake-up: a late notify of the round
                // before; park again.
                if let Some(got) = seen.or_else(|| result_rx.try_recv().ok()) {
                    break got;
                }
            };
            assert_eq!(got, round);
        }
        drop(go_tx);
        sender.join().expect("sender");
        // With the sender gone nothing notifies: unpark leaves the
        // eventfd drained.
        wake.unpark();
        assert!(!readable_now(wake.raw()));
    }

    #[test]
    fn an_awake_owner_is_not_notified() {
        let wake = ParkWake::new().expect("eventfd");
        wake.notify_if_parked();
        assert!(!readable_now(wake.raw()));
        wake.park();
        wake.notify_if_parked();
        assert!(readable_now(wake.raw()));
        wake.unpark();
        assert!(!readable_now(wake.raw()), "unpark drains the eventfd");
    }

    #[test]
    fn awake_stops_notifies_and_leaves_the_eventfd_to_drain() {
        let wake = ParkWake::new().expect("eventfd");
        wake.park();
        wake.notify_if_parked();
        wake.awake();
        assert!(readable_now(wake.raw()), "awake does not drain");
        wake.drain();
        assert!(!readable_now(wake.raw()));
        wake.notify_if_parked();
        assert!(!readable_now(wake.raw()), "awake: no more notifies");
    }
}
