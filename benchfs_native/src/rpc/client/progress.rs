//! The live progress record of a running phase: `(bytes done u64 LE, ops
//! done u64 LE)` rewritten in place about every [`PROGRESS_EVERY`], read by
//! the orchestrator while the phase runs.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How often the progress record is rewritten.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// The progress record file.
#[derive(Debug)]
pub struct Progress {
    file: File,
    /// When the phase next rewrites it.
    pub next: Instant,
}

impl Progress {
    /// Creates the record at `path`, zeroed.
    pub fn open(path: &PathBuf) -> Result<Progress> {
        let file = File::create(path)
            .map_err(|e| Error::from_io(&e, "create progress file", path.display().to_string()))?;
        let p = Progress {
            file,
            next: Instant::now() + PROGRESS_EVERY,
        };
        p.write(0, 0);
        Ok(p)
    }

    /// Rewrites the record in place.
    pub fn write(&self, bytes: u64, ops: u64) {
        let mut rec = [0u8; 16];
        rec[..8].copy_from_slice(&bytes.to_le_bytes());
        rec[8..].copy_from_slice(&ops.to_le_bytes());
        // Progress is advisory: a failed write must not fail the phase.
        let _ = self.file.write_at(&rec, 0);
    }
}
