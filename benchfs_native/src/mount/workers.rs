//! The threads that carry large transfers: each owns a [`Client`] (whose
//! UCX worker belongs to the thread that made it) and runs the jobs sent
//! to it in order, replying to the kernel itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel, sync_channel};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::membership::Expected;
use crate::rpc::client::{Client, ClientOptions};

/// Empty progress calls a worker's wait for replies spins through before
/// it sleeps. A worker carries transfers of a millisecond or more, while
/// the daemons that answer them and the programs that wait for them need
/// the same cores: spinning through the whole transfer (the client's
/// default) takes a core from them.
const WORKER_SPIN: u32 = 200;

/// One request's work, run on a worker with its client.
pub type Job = Box<dyn FnOnce(&mut Client) + Send>;

/// The worker threads.
#[derive(Debug)]
pub struct Workers {
    senders: Vec<Sender<Job>>,
    threads: Vec<JoinHandle<()>>,
    /// Jobs queued or running, per worker.
    queued: Arc<Vec<AtomicUsize>>,
}

impl Workers {
    /// Starts `n` workers, each connected to the daemons of
    /// `registry_dir`; fails (after stopping those started) if any cannot
    /// connect.
    pub fn start(
        n: usize,
        registry_dir: &Path,
        expected: &Expected,
        options: &ClientOptions,
    ) -> Result<Workers> {
        let mut workers = Workers {
            senders: Vec::with_capacity(n),
            threads: Vec::with_capacity(n),
            queued: Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect()),
        };
        let mut ready = Vec::with_capacity(n);
        for i in 0..n {
            let (tx, rx) = channel::<Job>();
            let (ready_tx, ready_rx) = sync_channel::<Result<()>>(1);
            let dir: PathBuf = registry_dir.to_owned();
            let expected = expected.clone();
            let mut options = options.clone();
            options.name = format!("{}-w{i}", options.name);
            let thread = std::thread::Builder::new()
                .name(format!("benchfs-mount-{i}"))
                .spawn(move || match Client::connect(&dir, expected, options) {
                    Ok(client) => {
                        client.set_wait_spin(WORKER_SPIN);
                        let _ = ready_tx.send(Ok(()));
                        serve_jobs(client, &rx);
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                })
                .map_err(|e| Error::from_io(&e, "spawn", "mount worker thread"))?;
            workers.senders.push(tx);
            workers.threads.push(thread);
            ready.push(ready_rx);
        }
        for r in ready {
            r.recv()
                .map_err(|_| Error::os(libc::EIO, "connect", "a mount worker ended"))??;
        }
        Ok(workers)
    }

    /// How many workers.
    pub fn len(&self) -> usize {
        self.senders.len()
    }

    /// Never: at least one worker runs.
    pub fn is_empty(&self) -> bool {
        self.senders.is_empty()
    }

    /// Queues `job` on the worker with the fewest jobs. A job that cannot
    /// be queued (the worker is gone) is dropped, and with it its reply,
    /// which tells the kernel `EIO`.
    pub fn send(&self, job: Job) {
        let queued = &self.queued;
        let Some(i) = (0..queued.len()).min_by_key(|&i| queued[i].load(Ordering::Relaxed)) else {
            return;
        };
        queued[i].fetch_add(1, Ordering::Relaxed);
        let counts = Arc::clone(queued);
        let counted: Job = Box::new(move |c: &mut Client| {
            job(c);
            counts[i].fetch_sub(1, Ordering::Relaxed);
        });
        if let Some(tx) = self.senders.get(i) {
            let _ = tx.send(counted);
        }
    }

    /// Lets the workers finish their queues, then disconnects them.
    pub fn stop(mut self) {
        self.senders.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn serve_jobs(mut client: Client, rx: &Receiver<Job>) {
    while let Ok(job) = rx.recv() {
        job(&mut client);
    }
    client.disconnect();
}
