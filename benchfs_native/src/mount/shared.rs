//! What the session thread and the workers share: the node table, the
//! open files and directories, and the files unlinked while open.
//!
//! A FUSE file handle names a [`FileRef`] in a table shared by all
//! threads: the daemons keep nothing per open file, so any client serves
//! any handle.
//!
//! A file this mount has open is not removed when unlinked or renamed
//! over: it is renamed to a hidden name in its directory and removed at its
//! last release, as NFS clients do (see [`super::unlinked`]). A name of a
//! file with other names is removed at once: the data stays with them.
//!
//! A file with several names (hard links) is one node with several paths
//! ([`Inodes`]); a request on it uses the first that still exists. Its
//! mode, owner and times are the file's (kept by its home daemon), so a
//! change through any path is seen through every other.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use fuser::{FileAttr, FileType};

use super::attr::{Owner, engine_ino, file_attr, file_type, root_attr};
use super::errno::errno_of;
use super::inodes::{Inodes, ROOT, join};
use super::unlinked::{Unlinked, hidden_name, is_hidden};
use super::walk::Walks;
use crate::error::{Error, Result};
use crate::rpc::client::{Attr, Client, Entry, FileKind, FileRef};

/// One entry of an open directory.
#[derive(Debug)]
pub(super) struct DirEntry {
    pub(super) name: String,
    pub(super) kind: FileType,
    pub(super) ino: u64,
}

/// What the workers share with the session thread.
#[derive(Debug)]
pub(super) struct Shared {
    inodes: Mutex<Inodes>,
    /// Open directories: their listing, taken at opendir.
    dirs: Mutex<HashMap<u64, Arc<Vec<DirEntry>>>>,
    next_dir: AtomicU64,
    /// Open files by FUSE file handle.
    files: Mutex<HashMap<u64, Arc<FileRef>>>,
    next_file: AtomicU64,
    /// Open files unlinked or renamed over, under their hidden names.
    /// Held across the rename or remove that changes it, so that an
    /// unlink and the last release of one file do not interleave.
    unlinked: Mutex<Unlinked>,
    owner: Owner,
    pub(super) attr_ttl: Duration,
    pub(super) entry_ttl: Duration,
    /// Each thread's last lookup, for its walk's next getattr.
    pub(super) walks: Walks,
}

impl Shared {
    pub(super) fn new(owner: Owner, attr_ttl: Duration, entry_ttl: Duration) -> Shared {
        Shared {
            inodes: Mutex::new(Inodes::new()),
            dirs: Mutex::new(HashMap::new()),
            next_dir: AtomicU64::new(1),
            files: Mutex::new(HashMap::new()),
            next_file: AtomicU64::new(1),
            unlinked: Mutex::new(Unlinked::default()),
            owner,
            attr_ttl,
            entry_ttl,
            walks: Walks::default(),
        }
    }

    pub(super) fn inodes(&self) -> MutexGuard<'_, Inodes> {
        // A panic while holding the lock leaves a table that is still
        // consistent (every update is one statement).
        self.inodes.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn files(&self) -> MutexGuard<'_, HashMap<u64, Arc<FileRef>>> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A FUSE file handle for `file`.
    pub(super) fn opened(&self, file: FileRef) -> u64 {
        let fh = self.next_file.fetch_add(1, Ordering::Relaxed);
        self.files().insert(fh, Arc::new(file));
        fh
    }

    pub(super) fn unlinked(&self) -> MutexGuard<'_, Unlinked> {
        self.unlinked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The engine id of `path` if this mount has it open.
    pub(super) fn open_ino(&self, path: &str) -> Option<u64> {
        let ino = self.inodes().known(path)?;
        self.files().values().any(|f| f.ino == ino).then_some(ino)
    }

    /// The engine id of `path` if this mount has it open and `path` is its
    /// file's only name: removing that name would remove the data, so it
    /// is hidden instead. A name of several is removed at once.
    pub(super) fn open_only_name(&self, client: &mut Client, path: &str) -> Result<Option<u64>> {
        let Some(ino) = self.open_ino(path) else {
            return Ok(None);
        };
        let a = client.stat(path)?;
        Ok((a.ino != ino || a.nlink <= 1).then_some(ino))
    }

    /// `op` on a path of node `ino`: the first of its paths, or when that
    /// is found missing (another client renamed or removed that name of a
    /// file with several), the next. Returns the path that served.
    pub(super) fn on_paths<T>(
        &self,
        client: &mut Client,
        ino: u64,
        mut op: impl FnMut(&mut Client, &str) -> Result<T>,
    ) -> Result<(String, T)> {
        let paths = self.inodes().paths(ino);
        let mut last = Error::os(libc::ENOENT, "lookup", format!("node {ino}"));
        for (i, path) in paths.iter().enumerate() {
            match op(client, path) {
                Ok(v) => return Ok((path.clone(), v)),
                Err(e) if e.errno() == Some(libc::ENOENT) && i + 1 < paths.len() => {
                    // Only a name that is itself gone is dropped (the op's
                    // ENOENT may be about another path, as link's target).
                    let gone =
                        matches!(client.stat(path), Err(g) if g.errno() == Some(libc::ENOENT));
                    if !gone {
                        return Err(e);
                    }
                    self.inodes().drop_path(ino, path);
                    last = e;
                }
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// Moves `path`, open here as file `ino`, out of the way to its hidden
    /// name, where its open handles go on using it until the last release.
    pub(super) fn hide(
        &self,
        client: &mut Client,
        unlinked: &mut Unlinked,
        path: &str,
        ino: u64,
    ) -> Result<()> {
        let hidden = hidden_name(path, ino);
        client.rename(path, &hidden)?;
        self.inodes().renamed(path, &hidden);
        unlinked.insert(ino, hidden);
        Ok(())
    }

    /// Undoes [`Shared::hide`] of `path` (the rename it made room for
    /// failed), so that a failed rename leaves both names as they were.
    pub(super) fn unhide(
        &self,
        client: &mut Client,
        unlinked: &mut Unlinked,
        path: &str,
        ino: u64,
    ) {
        let Some(hidden) = unlinked.remove(ino) else {
            return;
        };
        match client.rename(&hidden, path) {
            Ok(()) => self.inodes().renamed(&hidden, path),
            Err(e) => {
                crate::log_line!("benchfs mount: {path} stays at {hidden}: {e}");
                unlinked.insert(ino, hidden);
            }
        }
    }

    /// After `file`'s handle left the table: removes the file if it was
    /// unlinked while open and this was its last handle here.
    pub(super) fn release_last(&self, client: &mut Client, file: &FileRef) -> Result<()> {
        let mut unlinked = self.unlinked();
        if unlinked.path(file.ino).is_none() || self.files().values().any(|f| f.ino == file.ino) {
            return Ok(());
        }
        let Some(hidden) = unlinked.remove(file.ino) else {
            return Ok(());
        };
        self.inodes().unlinked(&hidden);
        client.unlink(&hidden)
    }

    pub(super) fn dirs(&self) -> MutexGuard<'_, HashMap<u64, Arc<Vec<DirEntry>>>> {
        self.dirs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A FUSE directory handle for the listing `entries` of `dir`, taken
    /// now; hidden names (files unlinked while open) are left out.
    pub(super) fn opened_dir(&self, dir: &str, entries: Vec<Entry>) -> u64 {
        let list: Vec<DirEntry> = {
            let inodes = self.inodes();
            entries
                .into_iter()
                .filter(|e| !is_hidden(&e.name))
                .map(|e| {
                    let child = join(dir, &e.name);
                    let engine = (e.ino != 0).then_some(e.ino);
                    DirEntry {
                        ino: inodes
                            .known(&child)
                            .or(engine)
                            .unwrap_or_else(|| dir_ino(&child)),
                        kind: file_type(e.kind),
                        name: e.name,
                    }
                })
                .collect()
        };
        let dh = self.next_dir.fetch_add(1, Ordering::Relaxed);
        self.dirs().insert(dh, Arc::new(list));
        dh
    }

    /// The attributes of `path`, remembered as one lookup when `lookup`.
    pub(super) fn stat(&self, client: &mut Client, path: &str, lookup: bool) -> Result<FileAttr> {
        if path.is_empty() {
            return self.root(client);
        }
        let a = client.stat(path)?;
        Ok(self.attr(path, &a, lookup))
    }

    /// The root's attributes; daemons without a namespace have none.
    pub(super) fn root(&self, client: &mut Client) -> Result<FileAttr> {
        match client.stat("") {
            Ok(a) if engine_ino(&a).is_some() => Ok(file_attr(ROOT, &a, self.owner)),
            Ok(_) => Ok(root_attr(self.owner)),
            Err(e) if matches!(errno_of(&e), libc::ENOENT | libc::ENOSYS | libc::EINVAL) => {
                Ok(root_attr(self.owner))
            }
            Err(e) => Err(e),
        }
    }

    /// The kernel's attributes of `path` from the engine's `a`, remembered
    /// as one lookup when `lookup`.
    pub(super) fn attr(&self, path: &str, a: &Attr, lookup: bool) -> FileAttr {
        let mut inodes = self.inodes();
        let shared = a.nlink > 1 && a.kind != FileKind::Dir;
        let ino = if lookup {
            inodes.remember(path, engine_ino(a), shared)
        } else {
            inodes
                .known(path)
                .or(engine_ino(a))
                .unwrap_or_else(|| dir_ino(path))
        };
        file_attr(ino, a, self.owner)
    }
}

/// A `d_ino` for an entry the kernel has not looked up: any non-zero
/// number serves (`stat` gives the real one).
pub(super) fn dir_ino(path: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut h);
    h.finish() | 1
}
