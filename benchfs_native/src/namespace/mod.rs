//! The namespace records a daemon holds (docs/NAMESPACE.md): one record per
//! path whose metadata owner is this daemon, indexed by parent directory so
//! a readdir asks every daemon for the entries under one directory.
//!
//! Plain logic: no I/O, no clock (callers pass `now`), no locking (the
//! daemon wraps it in a mutex). The namespace lives in memory for the
//! daemon's life: a restarted daemon starts empty.
//!
//! * `record`: a record and its attributes.
//! * `ids`: the file ids a daemon hands out.
//! * `counts`: the link counts and shared attributes of the ids a daemon
//!   handed out.
//!
//! Hard links: a file with several names has one record per name (each
//! marked `linked`, on the owner of its own path) sharing one id, and one
//! link count and one set of attributes (mode, owner, times), kept in
//! [`Namespace::link_count`] by the daemon that handed out the id (its
//! home, [`home_node`]).
//!
//! A file's data: the home also keeps which of its ids were written to
//! ([`Namespace::mark_data`]), so that, while the file's record is still
//! on its home, a stat or unlink of a never-written file (mdtest's empty
//! files) needs no data daemon ([`Namespace::holds_no_data`]).

mod counts;
mod ids;
mod record;

use std::collections::{BTreeSet, HashMap, HashSet};

pub use counts::{CountStep, Counted, LinkCounts, MAX_LINKS, SharedAttrs};
pub use ids::{IdSource, home_node};
pub use record::{Kind, ROOT_INO, Record, chown_mode, permission_bits};

/// Why an operation is refused: the errno a client sees.
pub type Errno = i32;

/// Longest name of an entry, in bytes (Linux `NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// Paths of this many bytes or more are refused (Linux `PATH_MAX`, which
/// counts the NUL).
pub const PATH_MAX: usize = 4096;

/// `ENAMETOOLONG` when a component of `path` is longer than [`NAME_MAX`]
/// or `path` is [`PATH_MAX`] bytes or more, as Linux answers.
pub fn check_name_lengths(path: &str) -> Result<(), Errno> {
    if path.len() >= PATH_MAX || path.split('/').any(|c| c.len() > NAME_MAX) {
        return Err(libc::ENAMETOOLONG);
    }
    Ok(())
}

/// The parent directory of `path` ("" for a top-level name) and its name.
pub fn split_parent(path: &str) -> (&str, &str) {
    match path.rsplit_once('/') {
        Some((parent, name)) => (parent, name),
        None => ("", path),
    }
}

/// What a removal or a replacement took away: the id whose data (or link
/// count) the client settles, and whether the name was one of several.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Removed {
    /// A file's id; a symbolic link's only when `linked` (a link has no
    /// data); 0 when nothing was removed.
    pub id: u64,
    /// The name was one of several (a hard link): the client drops the
    /// count on the id's home daemon and removes the data only at 0.
    pub linked: bool,
    /// A name was there and went (a link's replacement; a symbolic
    /// link's has id 0, so only this tells it from no name at all).
    pub took_name: bool,
    /// The removed file had no data ([`Namespace::holds_no_data`]):
    /// nothing to remove on the data daemons.
    pub no_data: bool,
}

impl Removed {
    fn of(r: &Record) -> Removed {
        Removed {
            id: if r.linked { r.ino } else { r.data_id() },
            linked: r.linked,
            took_name: true,
            no_data: false,
        }
    }
}

/// Changes of [`Namespace::setattr`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Changes {
    /// Permission bits.
    pub mode: Option<u32>,
    /// Owner.
    pub uid: Option<u32>,
    /// Group.
    pub gid: Option<u32>,
    /// The size changed (files: mtime and ctime become `now`).
    pub resized: bool,
    /// Access time.
    pub atime: Option<u64>,
    /// Modification time.
    pub mtime: Option<u64>,
}

/// One page of a directory's entries on this daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// `(name, record)` in name order.
    pub entries: Vec<(String, Record)>,
    /// Where the next page starts.
    pub next_cursor: u64,
    /// No entries after these.
    pub eof: bool,
}

/// The records of one daemon.
#[derive(Debug)]
pub struct Namespace {
    records: HashMap<String, Record>,
    /// Parent directory -> names of its entries held here.
    children: HashMap<String, BTreeSet<String>>,
    /// Path -> target of each symbolic link held here.
    targets: HashMap<String, Box<str>>,
    /// Link counts of the ids handed out here.
    counts: LinkCounts,
    /// The ids handed out here that data was written to (or truncated),
    /// until their file's removal.
    written: HashSet<u64>,
    root: Record,
    ids: IdSource,
}

impl Namespace {
    /// An empty namespace (the root only, made at `now`) handing out ids
    /// from `ids`.
    pub fn new(ids: IdSource, now: u64, uid: u32, gid: u32) -> Namespace {
        Namespace {
            records: HashMap::new(),
            children: HashMap::new(),
            targets: HashMap::new(),
            counts: LinkCounts::default(),
            written: HashSet::new(),
            root: Record::root(now, uid, gid),
            ids,
        }
    }

    /// Records held (the root not counted).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Entries of the link table: ids handed out here that were given a
    /// second name and still have a name.
    pub fn link_table_len(&self) -> usize {
        self.counts.len()
    }

    /// Whether only the root is here.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The record of `path` ("" = the root).
    pub fn get(&self, path: &str) -> Option<&Record> {
        if path.is_empty() {
            Some(&self.root)
        } else {
            self.records.get(path)
        }
    }

    fn get_mut(&mut self, path: &str) -> Option<&mut Record> {
        if path.is_empty() {
            Some(&mut self.root)
        } else {
            self.records.get_mut(path)
        }
    }

    /// Inserts `rec` as `path`, with its target when it is a link.
    fn insert_link(&mut self, path: &str, rec: Record, target: &str) {
        self.targets.insert(path.to_owned(), target.into());
        self.insert(path, rec);
    }

    fn insert(&mut self, path: &str, rec: Record) {
        let (parent, name) = split_parent(path);
        self.children
            .entry(parent.to_owned())
            .or_default()
            .insert(name.to_owned());
        self.records.insert(path.to_owned(), rec);
    }

    fn remove(&mut self, path: &str) -> Option<Record> {
        let rec = self.records.remove(path)?;
        if rec.kind == Kind::Symlink {
            self.targets.remove(path);
        }
        let (parent, name) = split_parent(path);
        if let Some(set) = self.children.get_mut(parent) {
            set.remove(name);
            if set.is_empty() {
                self.children.remove(parent);
            }
        }
        Some(rec)
    }

    /// Creates the file record `path` (a FIFO's, a socket's or a device's when the
    /// type bits of `mode` say so: [`Kind::of_create_mode`]), or returns
    /// the file there when not `exclusive`; `true` when it was created. `ENAMETOOLONG`
    /// ([`check_name_lengths`]), `EEXIST` (exclusive, or a
    /// symbolic link is there: it is not followed), `EISDIR` (a directory
    /// is there).
    pub fn create(
        &mut self,
        path: &str,
        mode: u32,
        owner: (u32, u32),
        exclusive: bool,
        now: u64,
    ) -> Result<(Record, bool), Errno> {
        self.create_node(path, mode, 0, owner, exclusive, now)
    }

    /// [`Namespace::create`], keeping `rdev` as the number of a device
    /// node (ignored for the other kinds).
    pub fn create_node(
        &mut self,
        path: &str,
        mode: u32,
        rdev: u32,
        owner: (u32, u32),
        exclusive: bool,
        now: u64,
    ) -> Result<(Record, bool), Errno> {
        check_name_lengths(path)?;
        let kind = Kind::of_create_mode(mode)?;
        if let Some(r) = self.get(path) {
            return match r.kind {
                Kind::Dir if exclusive => Err(libc::EEXIST),
                Kind::Dir => Err(libc::EISDIR),
                Kind::File if exclusive || kind != Kind::File => Err(libc::EEXIST),
                Kind::File => Ok((*r, false)),
                _ => Err(libc::EEXIST),
            };
        }
        let mut rec = Record::new(kind, self.ids.next_id(), mode, owner, now);
        if kind.is_device() {
            rec.target_len = rdev;
        }
        self.insert(path, rec);
        Ok((rec, true))
    }

    /// Creates the directory record `path`. `EEXIST` if the name exists,
    /// `ENAMETOOLONG` ([`check_name_lengths`]).
    pub fn mkdir(
        &mut self,
        path: &str,
        mode: u32,
        owner: (u32, u32),
        now: u64,
    ) -> Result<Record, Errno> {
        check_name_lengths(path)?;
        if self.get(path).is_some() {
            return Err(libc::EEXIST);
        }
        let rec = Record::new(Kind::Dir, self.ids.next_id(), mode, owner, now);
        self.insert(path, rec);
        Ok(rec)
    }

    /// Creates the symbolic link record `path` pointing at `target` (kept
    /// as given; the caller checked its length). `EEXIST` if the name
    /// exists, `ENAMETOOLONG` ([`check_name_lengths`]).
    pub fn symlink(
        &mut self,
        path: &str,
        target: &str,
        owner: (u32, u32),
        now: u64,
    ) -> Result<Record, Errno> {
        check_name_lengths(path)?;
        if self.get(path).is_some() {
            return Err(libc::EEXIST);
        }
        let mut rec = Record::new(Kind::Symlink, self.ids.next_id(), 0o777, owner, now);
        rec.target_len = u32::try_from(target.len()).map_err(|_| libc::ENAMETOOLONG)?;
        self.insert_link(path, rec, target);
        Ok(rec)
    }

    /// The record and target of symbolic link `path`. `ENOENT`, `EINVAL`
    /// (not a link, as `readlink(2)`).
    pub fn readlink(&self, path: &str) -> Result<(Record, &str), Errno> {
        let r = self.get(path).ok_or(libc::ENOENT)?;
        match self.targets.get(path) {
            Some(t) if r.kind == Kind::Symlink => Ok((*r, t)),
            _ => Err(libc::EINVAL),
        }
    }

    /// Whether `path` may take new entries: `ENOENT` when missing or being
    /// removed, `ENOTDIR` when a file.
    pub fn check_parent(&self, path: &str) -> Result<(), Errno> {
        match self.get(path) {
            None => Err(libc::ENOENT),
            Some(r) if r.kind != Kind::Dir => Err(libc::ENOTDIR),
            Some(r) if r.removing => Err(libc::ENOENT),
            Some(_) => Ok(()),
        }
    }

    /// Stamps directory `path`'s mtime and ctime with `now`: an entry was
    /// added, removed or replaced under it; a subdirectory more or less
    /// (`subdirs`: +1, -1 or 0) changes its nlink. `ENOENT`, `ENOTDIR`.
    pub fn dir_changed(&mut self, path: &str, subdirs: i32, now: u64) -> Result<(), Errno> {
        let r = self.get_mut(path).ok_or(libc::ENOENT)?;
        if r.kind != Kind::Dir {
            return Err(libc::ENOTDIR);
        }
        r.mtime = now;
        r.ctime = now;
        r.subdirs = r.subdirs.saturating_add_signed(subdirs);
        Ok(())
    }

    /// Removes the file or symbolic link record `path` (only if its id is
    /// `ino`, unless 0); returns what to settle: the data to remove, or
    /// for a hard-linked name the count to drop. `ENOENT`, `EISDIR`.
    ///
    /// An unlink by id (a rename's removal of the old name, a create's
    /// undo) moves or drops a name, not the file: what the home knows of
    /// the file's data stays.
    pub fn unlink(&mut self, path: &str, ino: u64) -> Result<Removed, Errno> {
        let no_data = match self.get(path) {
            None => return Err(libc::ENOENT),
            Some(r) if r.kind == Kind::Dir => return Err(libc::EISDIR),
            Some(r) if ino != 0 && r.ino != ino => return Err(libc::ENOENT),
            Some(r) => self.holds_no_data(r),
        };
        let Some(r) = self.remove(path) else {
            return Ok(Removed::default());
        };
        if ino == 0 && !r.linked {
            self.written.remove(&r.ino);
        }
        Ok(Removed {
            no_data,
            ..Removed::of(&r)
        })
    }

    /// Whether record `r` is a file known to hold no data: one name, an
    /// id handed out here since this daemon started, and no write or
    /// truncate of it told ([`Self::mark_data`]). A file renamed in from
    /// another daemon (or from this one before a restart), or given a
    /// second name, is not known here: its data is asked of every daemon.
    pub fn holds_no_data(&self, r: &Record) -> bool {
        r.kind == Kind::File
            && !r.linked
            && self.ids.handed_out(r.ino)
            && !self.written.contains(&r.ino)
    }

    /// Data is written to file `ino`, an id handed out here, from now on
    /// (whichever daemon holds its record). `EINVAL` for another daemon's
    /// id or the root.
    pub fn mark_data(&mut self, ino: u64) -> Result<(), Errno> {
        if ino == ROOT_INO || !self.ids.is_mine(ino) {
            return Err(libc::EINVAL);
        }
        self.written.insert(ino);
        Ok(())
    }

    /// Marks the file or symbolic link record `path` (if its id is `ino`)
    /// as one of several names of its file, so that its removal drops the
    /// link count. `ENOENT` (gone, or another file now), `EPERM` (a
    /// directory: no hard links to directories).
    pub fn mark_linked(&mut self, path: &str, ino: u64) -> Result<(), Errno> {
        match self.records.get_mut(path) {
            None => Err(libc::ENOENT),
            Some(r) if r.kind == Kind::Dir => Err(libc::EPERM),
            Some(r) if r.ino != ino => Err(libc::ENOENT),
            Some(r) => {
                r.linked = true;
                Ok(())
            }
        }
    }

    /// One step on the link count and shared attributes of `ino`, an id
    /// handed out here, at `now`; returns what it leaves
    /// ([`LinkCounts::step`]). `EINVAL` (another daemon's id, or the
    /// root), `EMLINK` (already [`MAX_LINKS`]).
    pub fn link_count(&mut self, ino: u64, step: CountStep, now: u64) -> Result<Counted, Errno> {
        if ino == ROOT_INO || !self.ids.is_mine(ino) {
            return Err(libc::EINVAL);
        }
        self.counts.step(ino, step, now)
    }

    /// Marks directory `path` as being removed. `EBUSY` for the root or a
    /// directory already marked, `ENOENT`, `ENOTDIR`.
    pub fn rmdir_mark(&mut self, path: &str) -> Result<(), Errno> {
        if path.is_empty() {
            return Err(libc::EBUSY);
        }
        match self.records.get_mut(path) {
            None => Err(libc::ENOENT),
            Some(r) if r.kind != Kind::Dir => Err(libc::ENOTDIR),
            Some(r) if r.removing => Err(libc::EBUSY),
            Some(r) => {
                r.removing = true;
                Ok(())
            }
        }
    }

    /// Removes the marked directory `path`. `ENOENT` if it is not marked.
    pub fn rmdir_commit(&mut self, path: &str) -> Result<(), Errno> {
        match self.records.get(path) {
            Some(r) if r.kind == Kind::Dir && r.removing => {
                self.remove(path);
                Ok(())
            }
            _ => Err(libc::ENOENT),
        }
    }

    /// Clears the mark of directory `path`. `ENOENT` if it is not marked.
    pub fn rmdir_unmark(&mut self, path: &str) -> Result<(), Errno> {
        match self.records.get_mut(path) {
            Some(r) if r.kind == Kind::Dir && r.removing => {
                r.removing = false;
                Ok(())
            }
            _ => Err(libc::ENOENT),
        }
    }

    /// Removes the directory `path` if its id is `ino` (a mkdir whose
    /// parent vanished). `ENOENT` otherwise.
    pub fn rmdir_undo(&mut self, path: &str, ino: u64) -> Result<(), Errno> {
        match self.records.get(path) {
            Some(r) if r.kind == Kind::Dir && r.ino == ino => {
                self.remove(path);
                Ok(())
            }
            _ => Err(libc::ENOENT),
        }
    }

    /// Inserts `rec` as `path`: a file record when `target` is `None`, a
    /// symbolic link to `target` otherwise (`rec.linked`: one of several
    /// names of its file). A file or link there is replaced, unless
    /// `exclusive` (a hard link's new name: `EEXIST`); a name of the same
    /// file is left as it is (a rename between two names of one file does
    /// nothing) and reported as replaced by `rec.ino`. Returns what was
    /// replaced ([`Removed`]). `EISDIR` if a directory is there,
    /// `ENAMETOOLONG` ([`check_name_lengths`]).
    pub fn link(
        &mut self,
        path: &str,
        mut rec: Record,
        target: Option<&str>,
        exclusive: bool,
        now: u64,
    ) -> Result<Removed, Errno> {
        check_name_lengths(path)?;
        let replaced = match self.get(path) {
            Some(_) if exclusive => return Err(libc::EEXIST),
            Some(r) if r.kind == Kind::Dir => return Err(libc::EISDIR),
            Some(r) if r.ino == rec.ino => {
                return Ok(Removed {
                    id: r.ino,
                    linked: r.linked,
                    took_name: true,
                    no_data: false,
                });
            }
            Some(_) => self.remove(path),
            None => None,
        };
        rec.removing = false;
        rec.ctime = now;
        match target {
            Some(t) => {
                rec.kind = Kind::Symlink;
                rec.mode = 0o777;
                rec.target_len = u32::try_from(t.len()).map_err(|_| libc::ENAMETOOLONG)?;
                self.insert_link(path, rec, t);
            }
            None => {
                if !rec.kind.is_special() {
                    rec.kind = Kind::File;
                }
                if !rec.kind.is_device() {
                    rec.target_len = 0;
                }
                self.insert(path, rec);
            }
        }
        Ok(replaced.map_or_else(Removed::default, |r| Removed::of(&r)))
    }

    /// Applies `c` to the record of `path`; returns the new record.
    /// `ENOENT`, `EISDIR` (a size for a directory), `EINVAL` (a size for a
    /// symbolic link). A link's permission bits stay 0777, as on Linux.
    pub fn setattr(&mut self, path: &str, c: &Changes, now: u64) -> Result<Record, Errno> {
        let r = self.get_mut(path).ok_or(libc::ENOENT)?;
        if c.resized && r.kind == Kind::Dir {
            return Err(libc::EISDIR);
        }
        if c.resized && r.kind != Kind::File {
            return Err(libc::EINVAL);
        }
        let mut c = *c;
        if r.kind == Kind::Symlink {
            c.mode = None;
        }
        let mut shared = SharedAttrs::of(r);
        shared.apply(&c, now, r.kind == Kind::Dir);
        shared.set_on(r);
        Ok(*r)
    }

    /// Up to `max` entries of directory `dir` held here, from `cursor` (an
    /// index in name order).
    pub fn readdir(&self, dir: &str, cursor: u64, max: u32) -> Page {
        let Some(names) = self.children.get(dir) else {
            return Page {
                entries: Vec::new(),
                next_cursor: cursor,
                eof: true,
            };
        };
        let start = usize::try_from(cursor).unwrap_or(usize::MAX);
        let mut entries = Vec::with_capacity(names.len().min(max as usize));
        for name in names.iter().skip(start).take(max as usize) {
            let path = if dir.is_empty() {
                name.clone()
            } else {
                format!("{dir}/{name}")
            };
            if let Some(r) = self.records.get(&path) {
                entries.push((name.clone(), *r));
            }
        }
        let total = names.len() as u64;
        let next = (start as u64).saturating_add(u64::from(max)).min(total);
        Page {
            entries,
            next_cursor: next.max(cursor),
            eof: next >= total,
        }
    }
}

#[cfg(test)]
mod tests;
