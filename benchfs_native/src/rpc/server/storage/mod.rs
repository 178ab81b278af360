//! The storage pool: where a dispatched request's storage work runs. A
//! data read or write that fits one of the store's registered buffers is
//! started by the event loop itself on the store's ring ([`ring`]), which
//! the loop turns when the store is driven (the daemon's); a namespace
//! request (records in memory) and a data object's stat (one `openat` and
//! `fstat`) run in the loop itself ([`runs_in_loop`]): handing them to a
//! thread and back costs two wake-ups, which on busy cores are most of
//! their time; every other request goes to [`threads`] that call the
//! blocking chunk store API.
//! Either way the request is the decoded [`Job`] ([`job`]) and the answer
//! an [`Outcome`] holding the reply to send; [`execute`] and [`names`] say
//! what each request does.

mod execute;
mod job;
mod names;
mod ring;
mod threads;

pub(super) use job::{Failure, Job, Outcome};

use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use benchfs_ucx::AmMessage;
use execute::Storage;
use ring::OnRing;
use threads::Threads;

use super::data_buf::DataBuf;
use crate::error::Result;
use crate::rpc::wire::{OwnedRequest, RequestOf};
use crate::storage::{ChunkStore, StoreStats};

/// Where a job went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Started {
    /// On the store's ring, by the loop itself.
    OnRing,
    /// To a storage thread.
    Threads,
}

/// Whether the loop runs `request` itself: the namespace's requests but a
/// readdir (a page is up to thousands of entries), which only lock the
/// records in memory, and a data object's stat, two system calls on a
/// file's metadata. Writes, reads, fsyncs, truncates, a data object's
/// removal (which frees its blocks) and its times go to the ring or the
/// threads.
pub(super) fn runs_in_loop(request: &OwnedRequest) -> bool {
    match request {
        RequestOf::Stat { .. }
        | RequestOf::Create { .. }
        | RequestOf::Open { .. }
        | RequestOf::Mkdir { .. }
        | RequestOf::Rmdir { .. }
        | RequestOf::CheckParent { .. }
        | RequestOf::Link { .. }
        | RequestOf::Symlink { .. }
        | RequestOf::Readlink { .. }
        | RequestOf::LinkCount { .. } => true,
        RequestOf::Unlink { data, .. } | RequestOf::Setattr { data, .. } => !data,
        RequestOf::Ping { .. }
        | RequestOf::Write { .. }
        | RequestOf::Read { .. }
        | RequestOf::Fsync { .. }
        | RequestOf::Truncate { .. }
        | RequestOf::Readdir { .. }
        | RequestOf::Statfs
        | RequestOf::Stats
        | RequestOf::Shutdown { .. } => false,
    }
}

/// The storage side of one daemon: the store, what runs requests on it,
/// and the requests started on its ring.
#[derive(Debug)]
pub(super) struct StoragePool {
    store: Arc<ChunkStore>,
    storage: Arc<Storage>,
    threads: Threads,
    ring: OnRing,
}

impl StoragePool {
    /// Starts `threads` storage threads on `store` of daemon `node_id`,
    /// every write made durable when `fsync_each_write`.
    pub(super) fn start(
        store: Arc<ChunkStore>,
        threads: usize,
        fsync_each_write: bool,
        node_id: u32,
    ) -> Result<StoragePool> {
        let storage = Arc::new(Storage::new(Arc::clone(&store), fsync_each_write, node_id));
        Ok(StoragePool {
            threads: Threads::start(Arc::clone(&storage), threads)?,
            ring: OnRing::new()?,
            store,
            storage,
        })
    }

    /// Starts `job` on the ring, or hands it to a thread; `Err` gives it
    /// back when the threads have stopped.
    #[allow(
        clippy::result_large_err,
        reason = "the job moves whole either way; boxing it costs an allocation per request"
    )]
    pub(super) fn submit(&mut self, job: Job) -> std::result::Result<Started, Job> {
        let job = match self.ring.start(&self.storage, job) {
            Ok(()) => return Ok(Started::OnRing),
            Err(job) => job,
        };
        self.threads.submit(job).map(|()| Started::Threads)
    }

    /// Runs a job [`runs_in_loop`] takes, on the calling thread.
    pub(super) fn run_now(&self, job: Job) -> Outcome {
        self.storage.execute(job)
    }

    /// A finished job, if any: the threads' first, then the ring's. A
    /// ring result whose job is gone (not expected) gives back its buffer
    /// alone.
    pub(super) fn try_complete(&mut self) -> Option<std::result::Result<Outcome, Vec<u8>>> {
        if let Some(o) = self.threads.try_complete() {
            return Some(Ok(o));
        }
        self.ring.try_complete()
    }

    /// Gives a dispatched `job` its data buffer `buf` and the payload of
    /// its message `msg`, if it kept one. Eager data is copied out of UCX's
    /// buffer now (the job is then ready to submit: `None`); a rendezvous
    /// payload is to be received into the buffer returned with its message.
    /// A write the ring will take gets one of the store's registered
    /// buffers, which its data is received or copied into straight (no
    /// second copy), while the slot's pool vector waits idle in the job.
    pub(super) fn data_into(
        &self,
        job: &mut Job,
        msg: Option<AmMessage>,
        mut buf: Vec<u8>,
    ) -> Option<(AmMessage, DataBuf)> {
        match msg {
            Some(msg) if msg.is_rndv() => match self.storage.write_buf(job, msg.len()) {
                Some(fixed) => {
                    job.buf = buf;
                    Some((msg, DataBuf::Fixed(fixed)))
                }
                None => Some((msg, DataBuf::Heap(buf))),
            },
            Some(msg) => {
                let data = msg.data().unwrap_or(&[]);
                let fixed = if data.is_empty() {
                    None
                } else {
                    self.storage.write_buf(job, data.len())
                };
                match fixed {
                    Some(mut fixed) => {
                        fixed.fill_from(data);
                        job.fixed = Some(fixed);
                    }
                    None => buf.extend_from_slice(data),
                }
                job.buf = buf;
                None
            }
            None => {
                job.buf = buf;
                None
            }
        }
    }

    /// Turns a driven store's ring: submits what was started, answers what
    /// completed; whether anything moved.
    pub(super) fn drive(&self) -> bool {
        self.store.drive()
    }

    /// The eventfds a sleeping loop is woken through: the threads' and the
    /// ring's results, and a driven store's completions.
    pub(super) fn wake_fds(&self) -> Vec<RawFd> {
        let mut fds = vec![self.threads.wake().raw(), self.ring.wake().raw()];
        fds.extend(self.store.driven_wake().map(|w| w.raw()));
        fds
    }

    /// Announces a sleep to everyone who may send the loop a result; look
    /// for results once more after this, then sleep.
    pub(super) fn park(&self) {
        self.threads.wake().park();
        self.ring.wake().park();
        if let Some(w) = self.store.driven_wake() {
            w.park();
        }
    }

    /// Awake again.
    pub(super) fn unpark(&self) {
        self.threads.wake().unpark();
        self.ring.wake().unpark();
        if let Some(w) = self.store.driven_wake() {
            w.unpark();
        }
    }

    /// Before the last look at the results: a driven store's completion
    /// from here on writes its eventfd again.
    pub(super) fn rearm(&self) {
        if let Some(w) = self.store.driven_wake() {
            w.drain();
        }
    }

    /// Forgets the jobs on the ring and stops the threads (each finishes
    /// its job; their calls wait for a driven ring's turns, given
    /// meanwhile); false when some were still busy after a second.
    pub(super) fn stop(&mut self) -> bool {
        self.ring.clear();
        let store = Arc::clone(&self.store);
        self.threads
            .stop(Instant::now() + Duration::from_secs(1), || {
                store.drive();
            })
    }

    /// Namespace records held (the root not counted).
    pub(super) fn namespace_records(&self) -> usize {
        self.storage.namespace_records()
    }

    /// Entries of the link table.
    pub(super) fn link_table_entries(&self) -> usize {
        self.storage.link_table_entries()
    }

    /// The store's directory.
    pub(super) fn root(&self) -> &std::path::Path {
        self.store.root()
    }

    /// The store's counters.
    pub(super) fn store_stats(&self) -> StoreStats {
        self.store.stats()
    }
}
