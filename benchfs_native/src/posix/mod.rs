//! The data workload on any mounted file system (`workload.target =
//! "posix:PATH"`): one rank's IOR-style phase with plain `pwrite`/`pread`,
//! one transfer at a time as IOR's POSIX backend, `O_DIRECT` when asked.
//!
//! Same description and result as the engine's client phase
//! ([`PhaseSpec`], [`PhaseResult`]): IOR's layout, the writer's data
//! pattern (so `verify` works), the stonewall, wear-out through
//! `first_op`/`max_ops`, the progress record and the per-transfer latency,
//! so the two targets compare phase by phase.
//!
//! * `metadata`: the mdtest-style metadata phase with plain POSIX calls
//!   ([`run_metadata_phase`]).
//! * `find`: one level of IO500's find ([`find_level`]).

mod find;
mod metadata;

pub use self::find::{FindCriteria, LevelFound, find_level};
pub use self::metadata::run_metadata_phase;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::latency::summarize;
use crate::rpc::client::{PROGRESS_EVERY, Pattern, PhaseResult, PhaseSpec, Progress};

/// Buffer alignment: enough for `O_DIRECT` on every common device.
const ALIGN: usize = 4096;
/// Mode of the files a phase creates: nobody else's to read.
const FILE_MODE: u32 = 0o600;

/// Runs one rank's phase on the files under `dir`: open (creating for a
/// write), the transfers, fsync if asked, close. `path` in the result is
/// the file's name relative to `dir`, as the client names it.
pub fn run_phase(dir: &Path, spec: &PhaseSpec, direct: bool) -> Result<PhaseResult> {
    let total = spec.check()?;
    let name = spec.path();
    let path = dir.join(&name);
    let shown = path.display().to_string();
    let start_unix_ns = now_unix_ns();
    let t0 = Instant::now();
    let mut options = OpenOptions::new();
    if spec.write {
        options.write(true).create(true).mode(FILE_MODE);
    } else {
        options.read(true);
    }
    if direct {
        options.custom_flags(libc::O_DIRECT);
    }
    let file = options
        .open(&path)
        .map_err(|e| Error::from_io(&e, "open", shown.clone()))?;
    let t_open = Instant::now();
    let mut result = PhaseResult {
        path: name,
        total_ops: total,
        start_unix_ns,
        ..PhaseResult::default()
    };
    transfers(&file, spec, total, &shown, &mut result)?;
    let t_io = Instant::now();
    if spec.write && spec.fsync {
        file.sync_all()
            .map_err(|e| Error::from_io(&e, "fsync", shown.clone()))?;
    }
    drop(file);
    let t_end = Instant::now();
    result.end_unix_ns = now_unix_ns();
    result.elapsed_s = (t_end - t0).as_secs_f64();
    result.open_s = (t_open - t0).as_secs_f64();
    result.close_s = (t_end - t_io).as_secs_f64();
    result.latency = summarize(&result.latency_ns);
    Ok(result)
}

fn transfers(
    file: &File,
    spec: &PhaseSpec,
    total: u64,
    shown: &str,
    out: &mut PhaseResult,
) -> Result<()> {
    let ts = usize::try_from(spec.transfer_size)
        .map_err(|_| Error::invalid("transfer_size", "does not fit in memory"))?;
    let end_op = spec.end_op(total);
    let pattern = (spec.write || spec.verify).then(|| Pattern::new(spec.data_rank(), spec.seed));
    // One aligned buffer for every transfer (O_DIRECT needs the alignment).
    let mut raw = vec![0u8; ts + ALIGN];
    let at = raw.as_ptr().align_offset(ALIGN);
    let Some(buf) = raw.get_mut(at..at + ts) else {
        return Err(Error::os(libc::ENOMEM, "phase", "no aligned buffer"));
    };
    let mut progress = spec
        .progress_path
        .as_ref()
        .map(Progress::open)
        .transpose()?;
    let t_start = Instant::now();
    let stonewall_at = spec.stonewall.filter(|d| !d.is_zero()).map(|d| t_start + d);
    let mut last_done = t_start;
    let mut op = spec.first_op;
    let mut stopped = false;
    // Where `buf` holds the pattern of, for a write's next fill.
    let mut filled_at = None;
    out.latency_ns.reserve(
        usize::try_from(end_op.saturating_sub(op))
            .unwrap_or(0)
            .min(1 << 24),
    );
    while op < end_op {
        if stonewall_at.is_some_and(|t| Instant::now() >= t) {
            stopped = true;
            break;
        }
        let offset = spec.offset(op);
        if spec.write
            && let Some(p) = &pattern
        {
            p.refill(buf, offset, filled_at);
            filled_at = Some(offset);
        }
        let issued = Instant::now();
        let moved = if spec.write {
            write_all_at(file, buf, offset)
        } else {
            read_all_at(file, buf, offset)
        };
        let now = Instant::now();
        last_done = now;
        op += 1;
        let what = if spec.write { "write" } else { "read" };
        let failed = match moved {
            Ok(n) if n == ts => None,
            Ok(n) => Some(Error::os(
                libc::EIO,
                what,
                format!("{shown} at offset {offset}: {n} of {ts} bytes"),
            )),
            Err(e) => Some(Error::from_io(
                &e,
                what,
                format!("{shown} at offset {offset}"),
            )),
        };
        if let Some(e) = failed {
            out.errors += 1;
            if out.errors > spec.max_errors {
                return Err(e);
            }
        } else {
            out.ops += 1;
            out.bytes += ts as u64;
            out.latency_ns.push(
                u64::try_from(now.saturating_duration_since(issued).as_nanos()).unwrap_or(u64::MAX),
            );
            if !spec.write
                && spec.verify
                && let Some(p) = &pattern
                && let Some(bad) = p.check(buf, offset)
            {
                out.verify_errors += 1;
                out.first_bad_offset = Some(out.first_bad_offset.map_or(bad, |f| f.min(bad)));
            }
        }
        if let Some(p) = progress.as_mut()
            && now >= p.next
        {
            p.write(out.bytes, out.ops);
            p.next = now + PROGRESS_EVERY;
        }
    }
    out.ops_reached = op;
    out.stonewalled = stopped && op < end_op;
    out.io_s = last_done.saturating_duration_since(t_start).as_secs_f64();
    if let Some(p) = &progress {
        p.write(out.bytes, out.ops);
    }
    Ok(())
}

/// `pwrite` until all of `buf` is written (a short write is retried).
fn write_all_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.write_at(&buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// `pread` until `buf` is full or the file ends.
fn read_all_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

fn now_unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::path::PathBuf;

    use super::*;

    /// A directory of this test's own, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("bf-posix-{}-{name}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn spec(write: bool) -> PhaseSpec {
        PhaseSpec {
            write,
            ranks: 2,
            rank: 1,
            transfer_size: 8192,
            block_size: 8192 * 4,
            segments: 2,
            file_per_process: false,
            verify: !write,
            seed: 7,
            ..PhaseSpec::default()
        }
    }

    #[test]
    fn writes_the_layout_and_reads_it_back_verified() {
        let dir = Scratch::new("layout");
        let written = run_phase(dir.path(), &spec(true), false).unwrap();
        assert_eq!((written.ops, written.bytes), (8, 8 * 8192));
        assert_eq!(written.latency_ns.len(), 8);
        assert_eq!(written.path, "testfile");
        // Rank 1's blocks of a shared file: segment 0 at 1 block, segment 1 at 3.
        let len = std::fs::metadata(dir.path().join("testfile"))
            .unwrap()
            .len();
        assert_eq!(len, 4 * 4 * 8192);
        let read = run_phase(dir.path(), &spec(false), false).unwrap();
        assert_eq!((read.ops, read.verify_errors), (8, 0));
        let mut other = spec(false);
        other.rank = 0;
        // Rank 0's blocks were never written: zeros, which the pattern rejects.
        let wrong = run_phase(dir.path(), &other, false).unwrap();
        assert_eq!(wrong.verify_errors, 8);
    }

    #[test]
    fn wear_out_continues_where_the_stonewall_stopped() {
        let dir = Scratch::new("wearout");
        let mut first = spec(true);
        first.max_ops = 3;
        let done = run_phase(dir.path(), &first, false).unwrap();
        assert_eq!(
            (done.ops, done.ops_reached, done.stonewalled),
            (3, 3, false)
        );
        let mut rest = spec(true);
        rest.first_op = 3;
        let done = run_phase(dir.path(), &rest, false).unwrap();
        assert_eq!((done.ops, done.ops_reached), (5, 8));
    }

    #[test]
    fn a_missing_file_names_its_path() {
        let dir = Scratch::new("missing");
        let error = run_phase(dir.path(), &spec(false), false).unwrap_err();
        assert!(error.to_string().contains("testfile"), "{error}");
    }
}
