//! The pieces of one call in flight.

use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Instant;

use super::ChunkStore;
use super::request::{Done, Reply, ReqKind, Request, To};
use crate::error::{Error, Result};
use crate::storage::buffer::FixedBuf;

/// The pieces of one call in flight, with their shared reply channel.
pub(super) struct Batch<'a> {
    store: &'a ChunkStore,
    name: Arc<str>,
    tx: Sender<Done>,
    rx: Receiver<Done>,
    in_flight: usize,
    pub(super) index: usize,
    pub(super) err: Option<Error>,
}

impl<'a> Batch<'a> {
    pub(super) fn new(store: &'a ChunkStore, name: Arc<str>) -> Batch<'a> {
        let (tx, rx) = mpsc::channel();
        Batch {
            store,
            name,
            tx,
            rx,
            in_flight: 0,
            index: 0,
            err: None,
        }
    }

    /// A buffer; with the pool empty, first collects this call's own
    /// finished pieces (which return their buffers), then waits for any.
    pub(super) fn acquire(
        &mut self,
        on_done: &mut impl FnMut(Done, &mut Option<Error>),
    ) -> FixedBuf {
        let pool = &self.store.pool;
        let mut waited = false;
        loop {
            if let Some(b) = pool.try_acquire() {
                return b;
            }
            // The thread that turns a driven ring cannot block in the
            // pool: the buffers come back with completions it must take.
            let drives_here = self.store.drives_here();
            if self.in_flight == 0 && !drives_here {
                if waited {
                    // Counted once per acquire.
                    return pool.acquire_uncounted();
                }
                return pool.acquire();
            }
            if !waited {
                pool.note_wait();
                waited = true;
            }
            if self.in_flight == 0 {
                self.store.drive_waiting();
            } else {
                self.wait_one(on_done);
            }
        }
    }

    pub(super) fn submit(&mut self, want: usize, kind: ReqKind) -> Result<()> {
        let reply = Reply {
            to: Some(To::Caller(self.tx.clone())),
            index: self.index,
            want,
            done_bytes: 0,
            mtime_after: None,
        };
        let req = Request {
            name: Arc::clone(&self.name),
            kind,
            reply,
            queued_at: Instant::now(),
        };
        match self.store.send(req) {
            Ok(()) => {
                self.in_flight += 1;
                Ok(())
            }
            // The request (and its reply) came back with the error and was
            // dropped, which sent a `Closed` result: collect it.
            Err(e) => {
                self.in_flight += 1;
                let mut ignore = |_: Done, _: &mut Option<Error>| {};
                self.wait_one(&mut ignore);
                Err(e)
            }
        }
    }

    fn wait_one(&mut self, on_done: &mut impl FnMut(Done, &mut Option<Error>)) {
        match self.recv() {
            Ok(d) => {
                self.in_flight -= 1;
                on_done(d, &mut self.err);
            }
            // Unreachable while `self.tx` lives; treat as closed.
            Err(_) => {
                self.in_flight = 0;
                self.err.get_or_insert(Error::Closed);
            }
        }
    }

    /// The next result; on the thread that turns a driven store's ring,
    /// turning it until the result comes.
    fn recv(&self) -> Result<Done, mpsc::RecvError> {
        if !self.store.drives_here() {
            return self.rx.recv();
        }
        loop {
            match self.rx.try_recv() {
                Ok(d) => return Ok(d),
                Err(mpsc::TryRecvError::Empty) => self.store.drive_waiting(),
                Err(mpsc::TryRecvError::Disconnected) => return Err(mpsc::RecvError),
            }
        }
    }

    pub(super) fn finish(
        mut self,
        on_done: &mut impl FnMut(Done, &mut Option<Error>),
    ) -> Result<()> {
        while self.in_flight > 0 {
            self.wait_one(on_done);
        }
        match self.err.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
