//! Which thread serves a request: the session thread, with its own
//! client, or a worker; the session thread's spin after a reply; and
//! the threads' end at unmount.

use std::os::fd::RawFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{BenchFs, INLINE_IO};
use crate::mount::shared::Shared;
use crate::rpc::client::Client;

impl BenchFs {
    /// Serves `job` on the session thread, or on a worker when the kernel
    /// has another request waiting.
    pub(super) fn serve(&mut self, job: impl FnOnce(&mut Client, &Shared) + Send + 'static) {
        if self.workers.is_some() && requests_waiting(self.queue.load(Ordering::Relaxed)) {
            self.on_worker(job);
        } else {
            self.inline(job);
        }
    }

    /// Serves a transfer of `len` bytes: on a worker when large.
    pub(super) fn serve_io(
        &mut self,
        len: u32,
        job: impl FnOnce(&mut Client, &Shared) + Send + 'static,
    ) {
        if len > INLINE_IO && self.workers.is_some() {
            self.on_worker(job);
        } else {
            self.serve(job);
        }
    }

    pub(super) fn inline(&mut self, job: impl FnOnce(&mut Client, &Shared)) {
        self.served[0] += 1;
        if let Some(client) = self.client.as_deref_mut() {
            job(client, &self.shared);
        }
        self.spin_for_next();
    }

    /// The reply is out: polls `/dev/fuse` without sleeping for up to
    /// `session_spin`, so that `fuser`'s read which follows finds the next
    /// request there instead of putting the thread to sleep.
    pub(super) fn spin_for_next(&mut self) {
        let fd = self.queue.load(Ordering::Relaxed);
        if self.session_spin.is_zero() || fd < 0 {
            return;
        }
        self.spins[1] += 1;
        let until = Instant::now() + self.session_spin;
        loop {
            if requests_waiting(fd) {
                self.spins[0] += 1;
                return;
            }
            if Instant::now() >= until {
                return;
            }
            std::hint::spin_loop();
        }
    }

    pub(super) fn on_worker(&mut self, job: impl FnOnce(&mut Client, &Shared) + Send + 'static) {
        match &self.workers {
            Some(workers) => {
                self.served[1] += 1;
                let shared = Arc::clone(&self.shared);
                workers.send(Box::new(move |c: &mut Client| job(c, &shared)));
            }
            None => self.inline(job),
        }
    }

    /// At unmount: logs what each thread served, stops the workers and
    /// removes the files still hidden, then disconnects.
    pub(super) fn unmounted(&mut self) {
        crate::log_line!(
            "benchfs mount: {} requests served on the session thread, {} by workers",
            self.served[0],
            self.served[1]
        );
        if self.spins[1] > 0 {
            crate::log_line!(
                "benchfs mount: {} of {} session spins found the next request",
                self.spins[0],
                self.spins[1]
            );
        }
        if let Some(w) = self.workers.take() {
            w.stop();
        }
        if let Some(mut c) = self.client.take() {
            // Files still open at unmount were never released: remove
            // the ones unlinked while open.
            for hidden in self.shared.unlinked().drain() {
                if let Err(e) = c.unlink(&hidden) {
                    crate::log_line!("benchfs mount: {hidden} left behind: {e}");
                }
            }
            c.disconnect();
        }
    }
}

/// Whether the kernel has a request waiting on `/dev/fuse` descriptor `fd`
/// (none when it is not known yet).
fn requests_waiting(fd: RawFd) -> bool {
    fd >= 0 && crate::sys::readable_now(fd)
}
