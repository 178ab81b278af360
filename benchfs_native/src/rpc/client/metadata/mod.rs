//! The mdtest-style metadata phase: one rank's create, stat, read or
//! remove of its files, mkdir, stat, rename or rmdir of its directories,
//! or mkdir or rmdir of the directories of its tree (mdtest `-z`, `-b`),
//! one item after the other as mdtest does (one operation in flight per
//! rank), run entirely in Rust. A directory's rename is refused by the
//! daemons (EXDEV, docs/NAMESPACE.md); the posix loop does it.
//!
//! Each item is what the POSIX calls of mdtest cost here: a create is the
//! create RPC to the file's metadata owner (and the parent check on the
//! directory's owner when that is another daemon), a write of
//! `write_bytes` to the owner of chunk 0 (if any) and the close (an fsync
//! fan-out when the daemons' durability asks for it); a stat and an unlink
//! go to the owner and then to every daemon (docs/NAMESPACE.md); a read is
//! open, read, close. A directory's mkdir is the record on its owner and
//! the parent check; its stat one call to the owner; its rmdir the mark on
//! the owner, the empty check on every daemon and the commit. The create
//! phase (of either kind) first makes the rank's directory (and the prefix
//! above it; another rank's making it is fine). Each file's bytes are its
//! item's part of the rank's data pattern, so a read with `verify` tells a
//! file's own bytes from anything else (mdtest `-X`).
//!
//! Its waits for replies sleep after one empty progress call while
//! threads wait for a CPU ([`WaitSpin`]): a rank that spins for its reply
//! then holds the core the daemon answering it needs.
//!
//! * `spec`: what one rank does ([`MetadataSpec`]) and what it measured
//!   ([`MetadataResult`]).

mod spec;

use std::time::{Duration, Instant};

pub use self::spec::{ItemKind, MetadataOp, MetadataResult, MetadataSpec};
use super::Client;
use super::progress::{PROGRESS_EVERY, Progress};
use crate::error::{Error, Result};
use crate::latency::summarize;
use crate::membership::Record;
use crate::sys::RunQueue;

/// Empty progress calls a wait spins through while threads wait for a CPU.
pub const CONTENDED_WAIT_SPIN: u32 = 1;
/// Shortest time between two looks at the run queue (one `pread` of
/// `/proc/loadavg`, a few microseconds: one item in tens or more).
const LOOK_EVERY: Duration = Duration::from_millis(1);

/// The spin of a wait for replies: the client's own (`own`) while CPUs
/// are free or their state unknown, [`CONTENDED_WAIT_SPIN`] while threads
/// wait for one.
pub fn wait_spin_for(contended: Option<bool>, own: u32) -> u32 {
    if contended == Some(true) {
        CONTENDED_WAIT_SPIN.min(own)
    } else {
        own
    }
}

/// The client's wait spin through a phase, following the run queue.
#[derive(Debug)]
struct WaitSpin {
    run_queue: Option<RunQueue>,
    own: u32,
    now: u32,
    next_look: Instant,
}

impl WaitSpin {
    fn new(own: u32) -> WaitSpin {
        WaitSpin {
            run_queue: RunQueue::open(),
            own,
            now: own,
            next_look: Instant::now(),
        }
    }

    /// The spin to set, when it changed since the last look.
    fn look(&mut self) -> Option<u32> {
        let q = self.run_queue.as_ref()?;
        let now = Instant::now();
        if now < self.next_look {
            return None;
        }
        self.next_look = now + LOOK_EVERY;
        let spin = wait_spin_for(q.contended(), self.own);
        (spin != self.now).then(|| {
            self.now = spin;
            spin
        })
    }
}

/// One item done: the bytes it moved, and whether what it read was the
/// item's own data (always true without `verify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemDone {
    /// Bytes written or read.
    pub bytes: u64,
    /// The bytes read were the item's own.
    pub intact: bool,
}

impl ItemDone {
    /// An item that read nothing to check.
    pub fn moved(bytes: u64) -> ItemDone {
        ItemDone {
            bytes,
            intact: true,
        }
    }
}

/// The item loop of every metadata phase, whatever does the items (the
/// engine's client, plain POSIX calls): items `first_item..items` in order,
/// until the stonewall if one is set, the progress record and the per-item
/// latency. `item` does one item given its index and path; the first
/// failed item fails the phase, an item whose data was wrong is counted.
pub fn run_items(
    spec: &MetadataSpec,
    mut item: impl FnMut(u64, &str) -> Result<ItemDone>,
) -> Result<MetadataResult> {
    let mut progress = spec
        .progress_path
        .as_ref()
        .map(Progress::open)
        .transpose()?;
    let mut out = MetadataResult {
        dir: spec.dir(),
        start_unix_ns: Record::now_unix_ns(),
        ..MetadataResult::default()
    };
    out.latency_ns.reserve(
        usize::try_from(spec.items - spec.first_item)
            .unwrap_or(0)
            .min(1 << 24),
    );
    // A tree's items are its directories, in the order the phase takes them.
    let tree_order = (spec.kind == ItemKind::Tree).then(|| spec.tree_order());
    let t0 = Instant::now();
    let stonewall_at = spec.stonewall.filter(|d| !d.is_zero()).map(|d| t0 + d);
    let mut next = spec.first_item;
    while next < spec.items {
        if stonewall_at.is_some_and(|t| Instant::now() >= t) {
            out.stonewalled = true;
            break;
        }
        let path = match &tree_order {
            Some(order) => spec.tree_dir_path(
                order
                    .get(usize::try_from(next).unwrap_or(usize::MAX))
                    .copied()
                    .unwrap_or(next),
            ),
            None => spec.path(next),
        };
        let started = Instant::now();
        let done = item(next, &path)?;
        out.bytes += done.bytes;
        if !done.intact {
            out.verify_errors += 1;
            out.first_bad_item.get_or_insert(next);
        }
        out.latency_ns
            .push(u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX));
        out.ops += 1;
        next += 1;
        if let Some(p) = progress.as_mut()
            && Instant::now() >= p.next
        {
            p.write(out.bytes, out.ops);
            p.next = Instant::now() + PROGRESS_EVERY;
        }
    }
    out.items_reached = next;
    out.elapsed_s = t0.elapsed().as_secs_f64();
    out.end_unix_ns = Record::now_unix_ns();
    out.latency = summarize(&out.latency_ns);
    if let Some(p) = &progress {
        p.write(out.bytes, out.ops);
    }
    Ok(out)
}

impl Client {
    /// Runs one rank's metadata phase (see [`MetadataSpec`]) through the
    /// engine's client; the loop is [`run_items`].
    pub fn run_metadata_phase(&mut self, spec: &MetadataSpec) -> Result<MetadataResult> {
        spec.check()?;
        let counters0 = self.window.counters();
        let pattern = spec.pattern();
        let mut data = vec![0u8; usize::try_from(spec.write_bytes).unwrap_or(0)];
        if spec.kind == ItemKind::Tree {
            // The tree phase makes the rank's directory itself.
            if spec.op == MetadataOp::Create {
                self.mkdir_all(&spec.prefix, 0o755)?;
            }
        } else if spec.op == MetadataOp::Create {
            // Every rank makes its directory; another rank's is fine.
            self.mkdir_all(&spec.dir(), 0o755)?;
        }
        let mut spin = WaitSpin::new(self.wait_spin());
        let out = run_items(spec, |i, path| {
            if let Some(n) = spin.look() {
                self.set_wait_spin(n);
            }
            if !data.is_empty() && spec.op == MetadataOp::Create {
                spec.fill_item(&pattern, i, &mut data);
            }
            let (moved, read) = self.metadata_item(spec, i, path, &data)?;
            let intact = !spec.verify
                || spec.op != MetadataOp::Read
                || spec.item_is_intact(&pattern, i, &read);
            Ok(ItemDone {
                bytes: moved,
                intact,
            })
        });
        self.set_wait_spin(spin.own);
        let mut out = out?;
        let c = self.window.counters();
        out.rpcs = c.rpcs - counters0.rpcs;
        out.retries = c.retries - counters0.retries;
        self.window.flush_trace();
        Ok(out)
    }

    /// One item of the phase: the bytes it wrote or read, and those read.
    fn metadata_item(
        &mut self,
        spec: &MetadataSpec,
        i: u64,
        path: &str,
        data: &[u8],
    ) -> Result<(u64, Vec<u8>)> {
        if spec.kind != ItemKind::File {
            return match spec.op {
                MetadataOp::Create => self.mkdir(path, 0o755).map(|_| (0, Vec::new())),
                MetadataOp::Stat => self.stat(path).map(|_| (0, Vec::new())),
                MetadataOp::Remove => self.rmdir(path).map(|()| (0, Vec::new())),
                MetadataOp::Rename => {
                    // The engine refuses a directory's rename (EXDEV,
                    // docs/NAMESPACE.md); the error says so.
                    let (from, to) = spec.rename_paths(i);
                    self.rename(&from, &to).map(|()| (0, Vec::new()))
                }
                // Refused by `MetadataSpec::check`.
                MetadataOp::Read => Err(Error::invalid("phase", "read has no directory phase")),
            };
        }
        match spec.op {
            MetadataOp::Create => {
                let handle = self.create(path, 0o644, true)?;
                let written = if data.is_empty() {
                    Ok(0)
                } else {
                    self.write(handle, 0, data)
                };
                let closed = self.close(handle);
                let written = written?;
                closed?;
                Ok((written, Vec::new()))
            }
            MetadataOp::Stat => self.stat(path).map(|_| (0, Vec::new())),
            MetadataOp::Read => {
                let handle = self.open(path, libc::O_RDONLY, 0)?;
                let read = if spec.read_bytes == 0 {
                    Ok(Vec::new())
                } else {
                    let len = usize::try_from(spec.read_bytes).unwrap_or(usize::MAX);
                    self.read(handle, 0, len)
                };
                let closed = self.close(handle);
                let read = read?;
                closed?;
                Ok((read.len() as u64, read))
            }
            MetadataOp::Remove => self.unlink(path).map(|()| (0, Vec::new())),
            // Refused by `MetadataSpec::check`.
            MetadataOp::Rename => Err(Error::invalid("phase", "rename is a directory phase only")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_sleeps_at_once_only_while_threads_wait_for_a_cpu() {
        let own = benchfs_ucx::DEFAULT_SPIN_ITERATIONS;
        assert_eq!(wait_spin_for(Some(true), own), CONTENDED_WAIT_SPIN);
        assert_eq!(wait_spin_for(Some(false), own), own);
        assert_eq!(wait_spin_for(None, own), own);
        // A client told to spin less keeps its own.
        assert_eq!(wait_spin_for(Some(true), 0), 0);
    }
}
