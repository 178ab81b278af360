//! Link counts and shared attributes: how many names each file (or
//! symbolic link) that was given a second name has, and the attributes
//! its names share (POSIX keeps them in the inode, not the name), kept by
//! the daemon that handed out its id.

use std::collections::HashMap;

use super::record::{self, Record};
use super::{Changes, Errno};

/// Most names one file may have (`EMLINK` beyond, as ext4's limit).
pub const MAX_LINKS: u32 = 65_000;

/// The attributes every name of a file shares: the ones a setattr
/// changes (size, blocks and the data's mtime are the data daemons').
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SharedAttrs {
    /// Permission bits.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Access time, ns.
    pub atime: u64,
    /// Modification time, ns.
    pub mtime: u64,
    /// Status change time, ns.
    pub ctime: u64,
}

impl SharedAttrs {
    /// The shared attributes that record `r` holds.
    pub fn of(r: &Record) -> SharedAttrs {
        SharedAttrs {
            mode: r.mode,
            uid: r.uid,
            gid: r.gid,
            atime: r.atime,
            mtime: r.mtime,
            ctime: r.ctime,
        }
    }

    /// Writes them into record `r`.
    pub(super) fn set_on(self, r: &mut Record) {
        r.mode = self.mode;
        r.uid = self.uid;
        r.gid = self.gid;
        r.atime = self.atime;
        r.mtime = self.mtime;
        r.ctime = self.ctime;
    }

    /// `c` applied, the status change time stamped `now`: a setattr, on
    /// the home's copy or (through [`super::Namespace::setattr`]) on a
    /// record.
    /// A change of owner or group without a new mode drops set-user-ID,
    /// and set-group-ID when group-executable, of what is not a directory
    /// (`dir`), as `chown(2)` on Linux does (the kernel sends the mount's
    /// chown with the mode it computed, so this is for the native client).
    pub(super) fn apply(&mut self, c: &Changes, now: u64, dir: bool) {
        if let Some(m) = c.mode {
            self.mode = record::permission_bits(m);
        } else if (c.uid.is_some() || c.gid.is_some()) && !dir {
            self.mode = record::chown_mode(self.mode);
        }
        if let Some(u) = c.uid {
            self.uid = u;
        }
        if let Some(g) = c.gid {
            self.gid = g;
        }
        if c.resized {
            self.mtime = now;
        }
        if let Some(t) = c.atime {
            self.atime = t;
        }
        if let Some(t) = c.mtime {
            self.mtime = t;
        }
        self.ctime = now;
    }
}

/// A step of [`LinkCounts::step`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountStep {
    /// Read the count and the shared attributes.
    Get,
    /// One name more; the attributes of the file's name when this is its
    /// first second name (taken in only then: later, the table's are the
    /// file's).
    Add(SharedAttrs),
    /// One name less.
    Drop,
    /// An add taken back by a link whose source was gone at its mark
    /// (removed or renamed): one name less, and the entry goes back to
    /// one name with the count when no name of the file was ever marked.
    Undo,
    /// A setattr through one of the names.
    Set(Changes),
}

/// What a step leaves: the count, and the shared attributes when the
/// table keeps the file (`None`: it has one name and never had another,
/// or the table was lost with a restart; the name's record is the file's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    /// Names after the step (0: the last went).
    pub count: u32,
    /// The attributes the names share.
    pub shared: Option<SharedAttrs>,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    count: u32,
    shared: SharedAttrs,
    /// Whether a step that only a marked name sends (a drop, a get, a
    /// set) has come: a name of the file then reads this entry. Until
    /// then the count is the first name (unmarked, its record holds its
    /// attributes) and the adds of links under way.
    marked: bool,
}

/// The files given a second name, from that first link until their last
/// name goes. An entry whose count came back to 1 is kept: its remaining
/// name is marked linked and reads the file's attributes here, so a
/// change made through a name since removed is not lost. An id absent
/// from the table has one name and its record holds its attributes.
///
/// The exception is an [`CountStep::Undo`] that brings the count back to
/// 1 before any marked name has shown itself: every link so far failed at
/// its mark, so no record was ever marked and none reads the entry (the
/// one name left, if the source was renamed rather than removed, holds
/// its own attributes), and it goes. Were a marked name left, the count
/// could not be 1 without a drop: a link that marks its source either
/// makes a second name or takes its add back with a drop.
#[derive(Debug, Default)]
pub struct LinkCounts {
    linked: HashMap<u64, Entry>,
}

impl LinkCounts {
    /// One step on `ino` at time `now` (a link or a removal changes the
    /// file's status: ctime); the count after it (a drop from 1 gives 0:
    /// the last name is gone, the entry with it). `EMLINK` for an add at
    /// [`MAX_LINKS`].
    pub fn step(&mut self, ino: u64, step: CountStep, now: u64) -> Result<Counted, Errno> {
        let Some(e) = self.linked.get_mut(&ino) else {
            return Ok(match step {
                CountStep::Add(mut shared) => {
                    shared.ctime = now;
                    self.linked.insert(
                        ino,
                        Entry {
                            count: 2,
                            shared,
                            marked: false,
                        },
                    );
                    Counted {
                        count: 2,
                        shared: Some(shared),
                    }
                }
                CountStep::Drop | CountStep::Undo => Counted {
                    count: 0,
                    shared: None,
                },
                CountStep::Get | CountStep::Set(_) => Counted {
                    count: 1,
                    shared: None,
                },
            });
        };
        match step {
            CountStep::Get => e.marked = true,
            CountStep::Add(_) if e.count >= MAX_LINKS => return Err(libc::EMLINK),
            CountStep::Add(_) => {
                e.count += 1;
                e.shared.ctime = now;
            }
            CountStep::Drop => {
                e.marked = true;
                e.count -= 1;
                e.shared.ctime = now;
            }
            CountStep::Undo => {
                e.count -= 1;
                e.shared.ctime = now;
            }
            CountStep::Set(c) => {
                e.marked = true;
                e.shared.apply(&c, now, false);
            }
        }
        let unmarked_one = step == CountStep::Undo && e.count == 1 && !e.marked;
        let out = Counted {
            count: e.count,
            shared: (!unmarked_one).then_some(e.shared),
        };
        if e.count == 0 || unmarked_one {
            self.linked.remove(&ino);
        }
        Ok(out)
    }

    /// Files kept (given a second name, not yet removed).
    pub fn len(&self) -> usize {
        self.linked.len()
    }

    /// Whether no file was given a second name.
    pub fn is_empty(&self) -> bool {
        self.linked.is_empty()
    }
}
