//! A ring turned by the thread that opened the store, instead of a driver
//! thread of its own: the daemon's event loop, which then starts a small
//! read or write and takes its completion itself, with no thread between
//! it and the kernel (docs/RPC.md, "Threads").
//!
//! Other threads still send their requests over the store's channel; the
//! owner takes them at its next turn. The owner sleeps in epoll on the
//! store's eventfd ([`ChunkStore::driven_wake`](super::ChunkStore::driven_wake)),
//! which senders write while it is parked and the kernel writes when
//! completions arrive. A blocking call made on the owner thread turns the
//! ring itself until its answer comes.

use std::cell::Cell;
use std::sync::{Mutex, PoisonError};

use super::request::Request;
use super::ring_thread::RingThread;

thread_local! {
    /// Its address tells threads apart without a system call.
    static THREAD_KEY: Cell<u8> = const { Cell::new(0) };
}

/// The calling thread, as a number no other live thread shares.
fn thread_key() -> usize {
    THREAD_KEY.with(|k| std::ptr::from_ref(k) as usize)
}

/// The ring of a driven store and the thread that turns it.
pub(super) struct Driven {
    owner: usize,
    /// `None` once closed, or after the ring failed.
    ring: Mutex<Option<RingThread>>,
}

impl Driven {
    /// `ring`, turned by the calling thread from now on.
    pub(super) fn new(ring: RingThread) -> Driven {
        Driven {
            owner: thread_key(),
            ring: Mutex::new(Some(ring)),
        }
    }

    /// Whether the calling thread turns the ring.
    #[inline]
    pub(super) fn here(&self) -> bool {
        thread_key() == self.owner
    }

    /// Runs `f` on the ring, from the owner thread only; a ring that fails
    /// is dropped (its requests then answer `Closed`).
    fn with<R>(&self, f: impl FnOnce(&mut RingThread) -> std::io::Result<R>) -> Option<R> {
        if !self.here() {
            return None;
        }
        let mut guard = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        let ring = guard.as_mut()?;
        match f(ring) {
            Ok(r) => Some(r),
            Err(_) => {
                if let Some(mut ring) = guard.take() {
                    ring.flush_trace();
                }
                None
            }
        }
    }

    /// One turn without waiting; whether anything happened.
    #[inline]
    pub(super) fn turn(&self) -> bool {
        self.with(RingThread::turn).unwrap_or(false)
    }

    /// One turn, waiting for a completion when nothing happened.
    pub(super) fn turn_waiting(&self) {
        if self.with(RingThread::turn_waiting).is_none() {
            // Not the owner, or no ring: nothing to wait for here.
            std::thread::yield_now();
        }
    }

    /// Hands a request of the owner thread straight to the ring; gives it
    /// back from any other thread or when the ring is gone.
    #[allow(
        clippy::result_large_err,
        reason = "the request moves whole either way; boxing it costs an allocation per request"
    )]
    pub(super) fn take(&self, req: Request) -> Result<(), Request> {
        if !self.here() {
            return Err(req);
        }
        let mut guard = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        match guard.as_mut() {
            Some(ring) => {
                ring.take(req);
                Ok(())
            }
            None => Err(req),
        }
    }

    /// At close: on the owner, answers everything accepted (the channel's
    /// senders already gone); elsewhere the ring is dropped, which waits
    /// for what is in the kernel and answers the rest `Closed`.
    pub(super) fn finish(&self) {
        if self.here() {
            while self
                .with(|ring| {
                    ring.turn_waiting()?;
                    Ok(ring.in_flight() > 0)
                })
                .unwrap_or(false)
            {}
        }
        let ring = self
            .ring
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut ring) = ring {
            ring.flush_trace();
        }
    }
}
