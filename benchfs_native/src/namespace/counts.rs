//! Link counts: how many names each file (or symbolic link) with more
//! than one has, kept by the daemon that handed out its id.

use std::collections::HashMap;

use super::Errno;

/// Most names one file may have (`EMLINK` beyond, as ext4's limit).
pub const MAX_LINKS: u32 = 65_000;

/// A step of [`LinkCounts::step`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountStep {
    /// Read the count.
    Get,
    /// One name more.
    Add,
    /// One name less.
    Drop,
}

/// The counts above 1; an id absent from the table has one name (a file
/// that never had a second), and a count back at 1 leaves it.
#[derive(Debug, Default)]
pub struct LinkCounts {
    above_one: HashMap<u64, u32>,
}

impl LinkCounts {
    /// One step on the count of `ino`; returns the count after it (a drop
    /// from 1 gives 0: the last name is gone). `EMLINK` for an add at
    /// [`MAX_LINKS`].
    pub fn step(&mut self, ino: u64, step: CountStep) -> Result<u32, Errno> {
        let now = self.above_one.get(&ino).copied().unwrap_or(1);
        let next = match step {
            CountStep::Get => return Ok(now),
            CountStep::Add if now >= MAX_LINKS => return Err(libc::EMLINK),
            CountStep::Add => now + 1,
            CountStep::Drop => now.saturating_sub(1),
        };
        if next > 1 {
            self.above_one.insert(ino, next);
        } else {
            self.above_one.remove(&ino);
        }
        Ok(next)
    }

    /// Ids with more than one name.
    pub fn len(&self) -> usize {
        self.above_one.len()
    }

    /// Whether every id has one name.
    pub fn is_empty(&self) -> bool {
        self.above_one.is_empty()
    }
}
