//! Whether a thread is waiting for a CPU anywhere on the machine: the
//! kernel's count of runnable threads (the fourth field of `/proc/loadavg`,
//! `running/total`) against the online CPUs.
//!
//! Why this signal: it is instantaneous and machine-wide, so it says that
//! someone else wants a CPU before spinning takes one from them. A
//! thread's own run delay (`/proc/thread-self/schedstat`) or involuntary
//! switches (`getrusage`) only grow after the spinner was preempted, i.e.
//! after the harm. One `pread` of the open file costs about 1 us on this
//! machine (`/proc/stat`'s `procs_running`, the same figure, about 6 us).

use std::fs::File;
use std::os::unix::fs::FileExt;

/// The open `/proc/loadavg` and the online CPU count.
#[derive(Debug)]
pub struct RunQueue {
    loadavg: File,
    cpus: u32,
}

impl RunQueue {
    /// Opens `/proc/loadavg`; `None` where it cannot be read.
    pub fn open() -> Option<RunQueue> {
        let loadavg = File::open("/proc/loadavg").ok()?;
        // Safety: sysconf reads a system value, no memory is passed.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        let cpus = u32::try_from(online).ok().filter(|&n| n > 0)?;
        let probe = RunQueue { loadavg, cpus };
        probe.runnable()?;
        Some(probe)
    }

    /// Online CPUs.
    pub fn cpus(&self) -> u32 {
        self.cpus
    }

    /// Runnable threads on the machine now, the caller included.
    pub fn runnable(&self) -> Option<u32> {
        let mut buf = [0u8; 128];
        // A read at offset 0 makes the kernel format the line afresh.
        let n = self.loadavg.read_at(&mut buf, 0).ok()?;
        runnable_of(buf.get(..n)?)
    }

    /// Whether more threads are runnable than there are CPUs (someone
    /// waits on a run queue); `None` if the count could not be read.
    pub fn contended(&self) -> Option<bool> {
        self.runnable().map(|n| n > self.cpus)
    }
}

/// The `running` of a `/proc/loadavg` line
/// (`0.52 0.58 0.59 3/412 12345`).
fn runnable_of(line: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(line).ok()?;
    let field = text.split_ascii_whitespace().nth(3)?;
    field.split_once('/')?.0.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_count_is_the_fourth_field_s_numerator() {
        assert_eq!(runnable_of(b"0.52 0.58 0.59 3/412 12345\n"), Some(3));
        assert_eq!(runnable_of(b"12.00 9.10 4.00 17/2048 1\n"), Some(17));
        assert_eq!(runnable_of(b"0.52 0.58 0.59\n"), None);
        assert_eq!(runnable_of(b"0.52 0.58 0.59 x/412 1\n"), None);
    }

    #[test]
    fn this_machine_s_count_includes_the_reader() {
        let probe = RunQueue::open().expect("/proc/loadavg is readable on Linux");
        assert!(probe.cpus() >= 1);
        assert!(probe.runnable().expect("a running count") >= 1);
    }
}
