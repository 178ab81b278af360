//! What the ring's driver is made of before its ring exists, and how the
//! ring is built: on the thread that opened the store, or on a driver
//! thread of its own.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;

use super::request::Msg;
use super::ring_thread::RingThread;
use crate::error::{Error, Result};
use crate::storage::buffer::BufferPool;
use crate::storage::driver::{Driver, RingSetup, SetupError};
use crate::storage::fd_cache::FdCache;
use crate::storage::stats::Counters;
use crate::sys::ParkWake;
use crate::trace::{TraceBuffer, TraceFile};

/// What the ring's driver is made of, before its ring exists.
pub(super) struct RingParts {
    pub(super) entries: u32,
    pub(super) pool: BufferPool,
    pub(super) counters: Arc<Counters>,
    pub(super) wake: Arc<ParkWake>,
    pub(super) fds: FdCache,
    pub(super) root_fd: Arc<OwnedFd>,
    pub(super) trace: Option<Arc<TraceFile>>,
    pub(super) rx: mpsc::Receiver<Msg>,
}

impl RingParts {
    /// The driver, its ring built on the calling thread (single-issuer:
    /// the thread that will submit). Driven (no thread of its own), the
    /// kernel writes the wake eventfd on completions, for an owner asleep
    /// in epoll; on a driver thread the ring polls that eventfd instead.
    pub(super) fn build(self, driven: bool) -> std::result::Result<RingThread, SetupError> {
        let trace = self.trace.map(TraceBuffer::new);
        let mut driver = Driver::new(
            self.entries,
            Some(&self.pool),
            Arc::clone(&self.counters),
            trace,
        )?;
        if driven {
            driver
                .register_eventfd(self.wake.raw())
                .map_err(|source| SetupError {
                    step: "register the store's eventfd with io_uring",
                    source,
                })?;
        } else {
            driver.set_wake_fd(self.wake.raw());
        }
        Ok(RingThread {
            driver,
            fds: self.fds,
            root_fd: self.root_fd,
            counters: self.counters,
            wake: self.wake,
            rx: self.rx,
            done: Vec::new(),
        })
    }

    /// Starts the driver thread.
    pub(super) fn spawn(self, root_str: &str) -> Result<(RingSetup, JoinHandle<()>)> {
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("benchfs-store".into())
            .spawn(move || match self.build(false) {
                Ok(ring) => {
                    let _ = ready_tx.send(Ok(ring.driver.setup()));
                    ring.run();
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            })
            .map_err(|e| Error::from_io(&e, "start driver thread", root_str))?;
        match ready_rx.recv() {
            Ok(Ok(setup)) => Ok((setup, thread)),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(Error::from_io(&e.source, e.step, root_str))
            }
            Err(_) => {
                let _ = thread.join();
                Err(Error::os(libc::EIO, "set up io_uring", root_str))
            }
        }
    }
}
