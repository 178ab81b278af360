//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "benchfs-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `f` on its own thread and fails the test if it takes longer than
/// `secs` (a hang becomes a failure, not a stuck test run).
pub fn watchdog<F: FnOnce() + Send + 'static>(secs: u64, f: F) {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => h.join().expect("test thread"),
        Err(RecvTimeoutError::Disconnected) => {
            if let Err(p) = h.join() {
                std::panic::resume_unwind(p);
            }
        }
        Err(RecvTimeoutError::Timeout) => panic!("watchdog: test still running after {secs}s"),
    }
}

/// Deterministic test bytes.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub fn is_root() -> bool {
    // Safety: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Options of a store with small chunks, buffers and ring, so tests reach
/// its limits quickly; `f` adjusts them further.
pub fn small_options(
    f: impl FnOnce(&mut benchfs_native::storage::StoreOptions),
) -> benchfs_native::storage::StoreOptions {
    let mut o = benchfs_native::storage::StoreOptions {
        chunk_size: 16 * 1024,
        buffer_size: 4096,
        pool_buffers: 16,
        ring_entries: 8,
        ..benchfs_native::storage::StoreOptions::default()
    };
    f(&mut o);
    o
}

/// A chunk store with [`small_options`], on its own driver thread.
pub fn small_store(
    dir: &Path,
    f: impl FnOnce(&mut benchfs_native::storage::StoreOptions),
) -> benchfs_native::storage::ChunkStore {
    benchfs_native::storage::ChunkStore::open(dir, small_options(f)).expect("open store")
}
