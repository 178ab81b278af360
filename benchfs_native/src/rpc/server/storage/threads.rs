//! The storage threads: `max_concurrency` threads running [`Job`]s against
//! the blocking chunk store API, their results sent back to the event loop
//! over a channel.
//!
//! Waking the loop: it sleeps in epoll on [`Threads::wake`] (the
//! protocol: [`ParkWake`]), which a thread writes after a result only
//! while the loop is parked, so a busy loop costs the threads no system
//! call per result.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::execute::Storage;
use super::job::{Job, Outcome};
use crate::error::{Error, Result};
use crate::sys::ParkWake;

/// The threads and both channels.
#[derive(Debug)]
pub struct Threads {
    jobs: Option<Sender<Job>>,
    done: Receiver<Outcome>,
    /// Jobs handed out and not yet taken back: with none, a look for
    /// results (every turn of the loop) skips the channel.
    outstanding: usize,
    wake: Arc<ParkWake>,
    threads: Vec<JoinHandle<()>>,
}

impl Threads {
    /// Starts `threads` threads executing jobs with `storage`.
    pub fn start(storage: Arc<Storage>, threads: usize) -> Result<Threads> {
        let wake = ParkWake::new().map_err(|e| Error::from_io(&e, "eventfd", "storage pool"))?;
        let wake = Arc::new(wake);
        let (job_tx, job_rx) = mpsc::channel::<Job>();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let (done_tx, done_rx) = mpsc::channel::<Outcome>();
        let mut pool = Threads {
            jobs: Some(job_tx),
            done: done_rx,
            outstanding: 0,
            wake: Arc::clone(&wake),
            threads: Vec::with_capacity(threads),
        };
        for i in 0..threads.max(1) {
            let rx = Arc::clone(&job_rx);
            let tx = done_tx.clone();
            let storage = Arc::clone(&storage);
            let wake = Arc::clone(&wake);
            let t = std::thread::Builder::new()
                .name(format!("benchfs-io-{i}"))
                .spawn(move || {
                    loop {
                        // Hold the lock only to take a job, not to run it.
                        let job = rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
                        let Ok(job) = job else { return };
                        if tx.send(storage.execute(job)).is_err() {
                            return;
                        }
                        wake.notify_if_parked();
                    }
                })
                .map_err(|e| Error::from_io(&e, "start storage thread", format!("benchfs-io-{i}")));
            match t {
                Ok(t) => pool.threads.push(t),
                Err(e) => {
                    pool.stop(Instant::now() + Duration::from_secs(5), || {});
                    return Err(e);
                }
            }
        }
        Ok(pool)
    }

    /// Hands `job` to a free thread. Never blocks: the caller bounds how
    /// many jobs are outstanding.
    #[allow(
        clippy::result_large_err,
        reason = "the job moves whole either way; boxing it costs an allocation per request"
    )]
    pub fn submit(&mut self, job: Job) -> std::result::Result<(), Job> {
        match &self.jobs {
            Some(tx) => {
                tx.send(job).map_err(|e| e.0)?;
                self.outstanding += 1;
                Ok(())
            }
            None => Err(job),
        }
    }

    /// A finished job, if any.
    pub fn try_complete(&mut self) -> Option<Outcome> {
        if self.outstanding == 0 {
            return None;
        }
        let done = self.done.try_recv().ok()?;
        self.outstanding -= 1;
        Some(done)
    }

    /// The eventfd the loop sleeps on, written when a result arrives
    /// while parked.
    pub fn wake(&self) -> &ParkWake {
        &self.wake
    }

    /// Stops the threads: each finishes its job, then exits. Joins them
    /// until `deadline`, calling `meanwhile` as it waits (a driven store's
    /// ring needs its owner's turns); returns false when some were still
    /// busy (they are left to finish on their own).
    pub fn stop(&mut self, deadline: Instant, mut meanwhile: impl FnMut()) -> bool {
        self.jobs = None;
        let mut all = true;
        for t in self.threads.drain(..) {
            while !t.is_finished() && Instant::now() < deadline {
                meanwhile();
                std::thread::sleep(Duration::from_millis(1));
            }
            if t.is_finished() {
                let _ = t.join();
            } else {
                all = false;
            }
        }
        all
    }
}

impl Drop for Threads {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.stop(Instant::now() + Duration::from_secs(5), || {});
        }
    }
}
