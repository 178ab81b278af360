//! The bulk storage benchmark: one pattern, `queue_depth` operations kept
//! in flight, the hot loop in Rust.
//!
//! It drives the store's own [`Driver`] inline on the calling thread (the
//! same push / submit-and-wait / reap code as the store's driver thread,
//! not a separate fast path), on plain files `bench.<i>` in `root`, with
//! registered buffers. Like fio, write patterns first reserve each file's
//! size with `fallocate`; random patterns use a cheap PRNG over
//! block-aligned offsets; reads expect the files of an earlier write.

use std::fs::{File, OpenOptions};
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::latency::{Histogram, LatencySummary};
use crate::storage::buffer::{BUF_ALIGN, BufferPool, FixedBuf};
use crate::storage::driver::{Completion, Driver};
use crate::storage::ops::{Op, Read, Write};
use crate::storage::stats::Counters;
use crate::sys;
use crate::trace::{TraceBuffer, TraceConfig, TraceFile};

/// Largest block size (64 MiB).
pub const MAX_BLOCK: usize = 64 << 20;
/// Largest queue depth.
pub const MAX_QUEUE_DEPTH: usize = 4096;
/// Most files.
pub const MAX_FILES: usize = 4096;

/// The access pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Sequential writes.
    Write,
    /// Sequential reads.
    Read,
    /// Random writes.
    RandWrite,
    /// Random reads.
    RandRead,
}

impl Pattern {
    /// Parses `write`, `read`, `randwrite`, `randread`.
    pub fn parse(s: &str) -> Result<Pattern> {
        Ok(match s {
            "write" => Pattern::Write,
            "read" => Pattern::Read,
            "randwrite" => Pattern::RandWrite,
            "randread" => Pattern::RandRead,
            _ => {
                return Err(Error::invalid(
                    "pattern",
                    format!("must be one of write, read, randwrite, randread, got {s:?}"),
                ));
            }
        })
    }

    /// The pattern's name.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Write => "write",
            Pattern::Read => "read",
            Pattern::RandWrite => "randwrite",
            Pattern::RandRead => "randread",
        }
    }

    /// Whether it writes.
    pub fn is_write(self) -> bool {
        matches!(self, Pattern::Write | Pattern::RandWrite)
    }

    /// Whether offsets are random.
    pub fn is_random(self) -> bool {
        matches!(self, Pattern::RandWrite | Pattern::RandRead)
    }
}

/// One benchmark run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchConfig {
    /// Directory of the files `bench.<i>`.
    pub root: PathBuf,
    /// Access pattern.
    pub pattern: Pattern,
    /// Bytes per operation.
    pub block_size: usize,
    /// Operations kept in flight.
    pub queue_depth: usize,
    /// Bytes moved in all (split evenly over the files).
    pub total_bytes: u64,
    /// Number of files.
    pub files: usize,
    /// O_DIRECT.
    pub direct: bool,
    /// Record a trace.
    pub trace: Option<TraceConfig>,
}

/// What a run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchResult {
    /// Pattern name.
    pub pattern: &'static str,
    /// Bytes per operation.
    pub block_size: usize,
    /// Operations kept in flight.
    pub queue_depth: usize,
    /// Number of files.
    pub files: usize,
    /// Bytes moved.
    pub bytes: u64,
    /// Operations completed.
    pub ops: u64,
    /// Wall time from the first submit to the last completion.
    pub seconds: f64,
    /// Throughput, MiB/s.
    pub mib_per_s: f64,
    /// Operations per second.
    pub iops: f64,
    /// Per-operation latency (submission to completion).
    pub latency: LatencySummary,
    /// Mean operations per `io_uring_enter` that submitted work.
    pub io_depth_mean: f64,
    /// Whether O_DIRECT was used.
    pub direct: bool,
    /// The ring's setup flags.
    pub ring_setup: &'static str,
}

/// splitmix64: a cheap, well-mixed PRNG.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    #[inline]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

impl BenchConfig {
    fn validate(&self) -> Result<()> {
        if self.block_size < 512
            || self.block_size > MAX_BLOCK
            || !self.block_size.is_multiple_of(512)
        {
            return Err(Error::invalid(
                "block_size",
                format!(
                    "must be a multiple of 512 between 512 and {MAX_BLOCK}, got {}",
                    self.block_size
                ),
            ));
        }
        if self.queue_depth == 0 || self.queue_depth > MAX_QUEUE_DEPTH {
            return Err(Error::invalid(
                "queue_depth",
                format!(
                    "must be between 1 and {MAX_QUEUE_DEPTH}, got {}",
                    self.queue_depth
                ),
            ));
        }
        if self.files == 0 || self.files > MAX_FILES {
            return Err(Error::invalid(
                "files",
                format!("must be between 1 and {MAX_FILES}, got {}", self.files),
            ));
        }
        let need = (self.block_size as u64).saturating_mul(self.files as u64);
        if self.total_bytes < need {
            return Err(Error::invalid(
                "total_bytes",
                format!(
                    "must be at least block_size * files = {need}, got {}",
                    self.total_bytes
                ),
            ));
        }
        if self.queue_depth.saturating_mul(self.block_size) > 16 << 30 {
            return Err(Error::invalid(
                "queue_depth",
                "queue_depth * block_size must be at most 16 GiB",
            ));
        }
        Ok(())
    }
}

fn open_file(path: &PathBuf, write: bool, direct: bool) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true);
    if write {
        o.write(true).create(true);
    }
    o.custom_flags(libc::O_CLOEXEC | if direct { libc::O_DIRECT } else { 0 })
        .mode(0o644);
    o.open(path)
}

/// Runs one benchmark.
pub fn run(cfg: &BenchConfig) -> Result<BenchResult> {
    cfg.validate()?;
    let root_str = cfg.root.to_string_lossy().into_owned();
    std::fs::create_dir_all(&cfg.root)
        .map_err(|e| Error::from_io(&e, "create bench dir", &root_str))?;
    if let Some(fs) = sys::network_fs(&cfg.root) {
        return Err(Error::invalid(
            "root",
            format!("{root_str} is on {fs}: io_uring on network file systems is not supported"),
        ));
    }
    if cfg.direct {
        match sys::dio_alignment(&cfg.root) {
            None => {
                return Err(Error::invalid(
                    "direct",
                    format!("the file system of {root_str} does not support O_DIRECT"),
                ));
            }
            Some(a) if !cfg.block_size.is_multiple_of(a.offset as usize) => {
                return Err(Error::invalid(
                    "block_size",
                    format!("must be a multiple of the O_DIRECT alignment {}", a.offset),
                ));
            }
            Some(_) => {}
        }
    }
    let bs = cfg.block_size;
    let per_file = cfg.total_bytes / cfg.files as u64 / bs as u64 * bs as u64;
    let blocks_per_file = per_file / bs as u64;
    let ops_total = blocks_per_file * cfg.files as u64;
    let write = cfg.pattern.is_write();

    let mut names = Vec::with_capacity(cfg.files);
    let mut fds: Vec<Arc<OwnedFd>> = Vec::with_capacity(cfg.files);
    for i in 0..cfg.files {
        let name = format!("bench.{i}");
        let path = cfg.root.join(&name);
        let shown = path.to_string_lossy().into_owned();
        let f =
            open_file(&path, write, cfg.direct).map_err(|e| Error::from_io(&e, "open", &shown))?;
        let size = f
            .metadata()
            .map_err(|e| Error::from_io(&e, "stat", &shown))?
            .len();
        if write {
            if size < per_file {
                sys::fallocate(&f, per_file)
                    .map_err(|e| Error::from_io(&e, "fallocate", &shown))?;
            }
        } else if size < per_file {
            return Err(Error::invalid(
                "pattern",
                format!("{shown} holds {size} bytes, {per_file} needed: run a write pattern first"),
            ));
        }
        names.push(shown);
        fds.push(Arc::new(f.into()));
    }

    let pool = BufferPool::new(cfg.queue_depth, bs.div_ceil(BUF_ALIGN) * BUF_ALIGN)
        .map_err(|e| Error::from_io(&e, "allocate buffers", &root_str))?;
    let mut free: Vec<FixedBuf> = Vec::with_capacity(cfg.queue_depth);
    let mut rng = Rng(0x5EED_0000_0000_0001 ^ cfg.total_bytes);
    for _ in 0..cfg.queue_depth {
        let Some(mut b) = pool.try_acquire() else {
            break;
        };
        if write {
            // Incompressible data, as fio writes by default.
            for w in b.as_mut_full().chunks_exact_mut(8) {
                w.copy_from_slice(&rng.next().to_le_bytes());
            }
        }
        b.set_len(bs);
        free.push(b);
    }

    let trace = match &cfg.trace {
        Some(t) => Some(TraceBuffer::new(TraceFile::open(t, "bench")?)),
        None => None,
    };
    let counters = Arc::new(Counters::default());
    let entries = (cfg.queue_depth as u32).next_power_of_two().max(4);
    let mut driver: Driver<u32> = Driver::new(entries, Some(&pool), Arc::clone(&counters), trace)
        .map_err(|e| Error::from_io(&e.source, e.step, &root_str))?;

    let op_name = if write { "write" } else { "read" };
    let mut hist = Histogram::default();
    let mut done: Vec<Completion<u32>> = Vec::with_capacity(cfg.queue_depth);
    let (mut issued, mut completed, mut bytes) = (0u64, 0u64, 0u64);
    let files = cfg.files as u64;
    let random = cfg.pattern.is_random();
    let start = Instant::now();
    while completed < ops_total {
        let now = Instant::now();
        while issued < ops_total {
            let Some(buf) = free.pop() else { break };
            let (file, block) = if random {
                (rng.below(files), rng.below(blocks_per_file))
            } else {
                (issued % files, issued / files)
            };
            let fd = Arc::clone(&fds[file as usize]);
            let offset = block * bs as u64;
            let op = if write {
                Op::Write(Write {
                    fd,
                    offset,
                    buf,
                    buf_offset: 0,
                    len: bs,
                    direct: cfg.direct,
                })
            } else {
                Op::Read(Read {
                    fd,
                    offset,
                    buf,
                    len: bs,
                    direct: cfg.direct,
                })
            };
            driver.push(op, file as u32, now);
            issued += 1;
            // Each operation goes to the kernel as soon as its buffer is
            // free, as fio's default `iodepth_batch_submit=1` does: a batch
            // of refills issued in one `io_uring_enter` reaches the disk
            // together, completes together and leaves the queue short while
            // the loop waits for the burst (about 10% fewer 4 KiB random
            // reads on the virtio disk, for fio forced to batch as well).
            driver
                .submit_and_wait(0)
                .map_err(|e| Error::from_io(&e, "io_uring_enter", &root_str))?;
        }
        driver
            .submit_and_wait(1)
            .map_err(|e| Error::from_io(&e, "io_uring_enter", &root_str))?;
        driver.reap(&mut done);
        for c in done.drain(..) {
            let file = c.token as usize;
            let shown = names.get(file).map_or("", String::as_str);
            if c.result < 0 {
                return Err(Error::os(-c.result, op_name, shown));
            }
            if c.result as usize != bs {
                // A short transfer: the file changed under us, or is full.
                return Err(Error::os(libc::EIO, op_name, shown));
            }
            bytes += bs as u64;
            completed += 1;
            hist.record(c.latency_ns);
            let mut buf = match c.op {
                Op::Read(r) => r.buf,
                Op::Write(w) => w.buf,
                _ => continue,
            };
            buf.set_len(bs);
            free.push(buf);
        }
    }
    let seconds = start.elapsed().as_secs_f64().max(1e-9);
    let snapshot = counters.snapshot();
    let ring_setup = driver.setup().flags();
    drop(driver);
    let mib = bytes as f64 / (1024.0 * 1024.0);
    Ok(BenchResult {
        pattern: cfg.pattern.name(),
        block_size: bs,
        queue_depth: cfg.queue_depth,
        files: cfg.files,
        bytes,
        ops: completed,
        seconds,
        mib_per_s: mib / seconds,
        iops: completed as f64 / seconds,
        latency: hist.stats(),
        io_depth_mean: if snapshot.submits == 0 {
            0.0
        } else {
            snapshot.sqes as f64 / snapshot.submits as f64
        },
        direct: cfg.direct,
        ring_setup,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_below_is_in_range() {
        let mut r = Rng(1);
        assert!((0..10_000).all(|_| r.below(7) < 7));
    }

    #[test]
    fn bad_arguments_name_themselves() {
        let base = BenchConfig {
            root: std::env::temp_dir(),
            pattern: Pattern::Write,
            block_size: 4096,
            queue_depth: 4,
            total_bytes: 1 << 20,
            files: 1,
            direct: false,
            trace: None,
        };
        let name = |c: BenchConfig| match run(&c) {
            Err(Error::InvalidArgument { name, .. }) => name,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            name(BenchConfig {
                block_size: 100,
                ..base.clone()
            }),
            "block_size"
        );
        assert_eq!(
            name(BenchConfig {
                queue_depth: 0,
                ..base.clone()
            }),
            "queue_depth"
        );
        assert_eq!(
            name(BenchConfig {
                files: 0,
                ..base.clone()
            }),
            "files"
        );
        assert_eq!(
            name(BenchConfig {
                total_bytes: 10,
                ..base.clone()
            }),
            "total_bytes"
        );
        assert!(Pattern::parse("nope").is_err());
    }
}
