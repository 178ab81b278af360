//! Data reads and writes served from the event loop straight on the
//! store's ring (docs/RPC.md, "Threads"): the loop starts the request
//! without waiting ([`ChunkStore::start_write`](crate::storage::ChunkStore::start_write))
//! and finds the answer on a channel it drains each turn. The daemon's
//! store is driven by the loop itself ([`ChunkStore::open_driven`](crate::storage::ChunkStore::open_driven)),
//! so no other thread is involved; with a store on its own driver thread
//! a request crosses that thread and back.
//!
//! A write made durable before its reply (the `SYNC` flag or
//! `fsync_each_write`) is followed by an fsync on the ring before the
//! answer. What stays on the pool: a request needing more than one of the
//! store's registered buffers, and any request the store does not start
//! (no free buffer, a bad path or range, a closed store): the blocking
//! call there does it or reports the error as always.
//!
//! No copy on the way: a rendezvous write's data is received straight
//! into one of the store's registered buffers ([`Storage::write_buf`],
//! taken at dispatch; [`Storage::start_on_ring`] starts the request) and written from it; a read is read into one and
//! the reply is sent from it. An eager write's data is copied out of
//! UCX's buffer straight into a registered buffer; a write that finds no
//! free registered buffer is received into a pool vector and copied into
//! a registered buffer when the ring takes the write.

use super::execute::Storage;
use super::job::{Job, Outcome, engine_fail};
use crate::rpc::wire::{Reply, RequestOf};
use crate::storage::buffer::FixedBuf;
use crate::storage::store::{Completions, Finished};
use crate::sys::ParkWake;

/// The outcome of `job`, started on the ring, from its result.
fn outcome_of(job: &Job, f: Finished) -> Outcome {
    let result = match f.result {
        Ok(n) => match job.request {
            RequestOf::Read { .. } => Ok(Reply::Read {
                len: f.fixed.as_ref().map_or(f.buf.len(), FixedBuf::len) as u64,
            }),
            _ => Ok(Reply::Write { written: n as u64 }),
        },
        Err(e) => Err(engine_fail(&job.request, &e)),
    };
    Outcome {
        token: job.token,
        result,
        buf: f.buf,
        fixed: f.fixed,
        storage_ns: f.storage_ns,
    }
}

/// Jobs started on the ring, by token, until their result comes back.
#[derive(Debug)]
pub(super) struct OnRing {
    done: Completions,
    jobs: rustc_hash::FxHashMap<u32, Job>,
}

impl OnRing {
    pub(super) fn new() -> crate::error::Result<OnRing> {
        Ok(OnRing {
            done: Completions::new()?,
            jobs: rustc_hash::FxHashMap::default(),
        })
    }

    /// What wakes a sleeping loop when a result comes back.
    pub(super) fn wake(&self) -> &ParkWake {
        self.done.wake()
    }

    /// Starts `job` on `storage`'s ring, or gives it back for the pool.
    #[allow(
        clippy::result_large_err,
        reason = "the job moves whole either way; boxing it costs an allocation per request"
    )]
    pub(super) fn start(&mut self, storage: &Storage, job: Job) -> Result<(), Job> {
        let job = storage.start_on_ring(job, &self.done)?;
        self.jobs.insert(job.token, job);
        Ok(())
    }

    /// The outcome of a finished job, if any; a result whose job is gone
    /// (not expected) gives back its buffer alone.
    pub(super) fn try_complete(&mut self) -> Option<Result<Outcome, Vec<u8>>> {
        if self.jobs.is_empty() {
            // Nothing started: no look at the channel (every turn).
            return None;
        }
        let f = self.done.try_take()?;
        let token = u32::try_from(f.tag).ok();
        Some(match token.and_then(|t| self.jobs.remove(&t)) {
            Some(job) => Ok(outcome_of(&job, f)),
            None => Err(f.buf),
        })
    }

    /// Forgets every job (at teardown; late results are dropped).
    pub(super) fn clear(&mut self) {
        self.jobs.clear();
    }
}
