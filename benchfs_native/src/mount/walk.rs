//! The attributes of each thread's last lookup, for the getattr that the
//! same path walk sends next.
//!
//! With no attribute cache (the strict default) the kernel walks a path
//! by asking, for each component, a lookup and then, to check the
//! directory's permissions or to answer a stat, a getattr of the node the
//! lookup just gave. Both come from one system call, microseconds apart:
//! the getattr is answered with the lookup's attributes instead of a
//! second round trip to the daemons, when it is the same thread's, for
//! the node of its last lookup, within [`WALK_REUSE`] of it, with no
//! change made through this mount in between, and only once. A change on
//! another node in that window is concurrent with the call, which may see
//! either state (docs/MOUNT.md, "Strict attributes and a path walk").

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fuser::FileAttr;

/// Longest time from a lookup to the getattr that may use its attributes:
/// past it the thread was descheduled or is in another call.
pub const WALK_REUSE: Duration = Duration::from_millis(1);

#[derive(Debug, Clone, Copy)]
struct Step {
    attr: FileAttr,
    generation: u64,
    at: Instant,
}

/// Per calling thread (the kernel's request pid), its last lookup.
#[derive(Debug, Default)]
pub struct Walks {
    steps: Mutex<HashMap<u32, Step>>,
    /// Bumped by every change made through the mount.
    generation: AtomicU64,
}

impl Walks {
    /// A change is under way through the mount: no lookup before it serves
    /// a getattr after it.
    pub fn changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// `thread` looked up the node `attr` describes, as of `generation`
    /// (read before the lookup's RPC was sent).
    pub fn looked_up(&self, thread: u32, attr: FileAttr, generation: u64) {
        let step = Step {
            attr,
            generation,
            at: Instant::now(),
        };
        self.lock().insert(thread, step);
    }

    /// The generation to give [`Walks::looked_up`].
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The attributes of node `ino` for `thread`'s getattr, if its last
    /// lookup gave them, recently and unchanged since. Any getattr of the
    /// thread's ends the step: it is used once, by the request right after.
    pub fn getattr(&self, thread: u32, ino: u64) -> Option<FileAttr> {
        let step = self.lock().remove(&thread)?;
        let fresh = step.attr.ino == ino
            && step.at.elapsed() <= WALK_REUSE
            && step.generation == self.generation();
        fresh.then_some(step.attr)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Step>> {
        // Every update is one statement: a poisoned map is still whole.
        self.steps.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mount::attr::{Owner, root_attr};

    /// A directory's attributes as node `ino`.
    fn attr(ino: u64) -> FileAttr {
        FileAttr {
            ino,
            ..root_attr(Owner { uid: 0, gid: 0 })
        }
    }

    #[test]
    fn a_getattr_after_the_same_threads_lookup_uses_it_once() {
        let w = Walks::default();
        w.looked_up(7, attr(42), w.generation());
        assert_eq!(w.getattr(7, 42).map(|a| a.ino), Some(42));
        assert!(w.getattr(7, 42).is_none(), "used once");
    }

    #[test]
    fn another_thread_or_node_or_a_change_in_between_asks_the_daemons() {
        let w = Walks::default();
        w.looked_up(7, attr(42), w.generation());
        assert!(w.getattr(8, 42).is_none(), "another thread");
        assert!(w.getattr(7, 43).is_none(), "another node");
        assert!(
            w.getattr(7, 42).is_none(),
            "ended by the getattr of another node"
        );
        w.looked_up(7, attr(42), w.generation());
        assert!(w.getattr(8, 42).is_none());
        assert!(w.getattr(7, 42).is_some(), "kept for its own thread");

        let before = w.generation();
        w.changed();
        w.looked_up(7, attr(42), before);
        assert!(
            w.getattr(7, 42).is_none(),
            "a change since the lookup's RPC"
        );
    }

    #[test]
    fn a_lookup_older_than_the_window_is_not_used() {
        let w = Walks::default();
        w.looked_up(7, attr(42), w.generation());
        std::thread::sleep(WALK_REUSE + Duration::from_millis(2));
        assert!(w.getattr(7, 42).is_none());
    }
}
