//! The FUSE operations. They run on the session thread only long enough to
//! resolve a node id to a path and hand the request to a worker; the
//! worker issues the RPCs and replies.
//!
//! An open file's requests all go to one worker, the one that opened it:
//! a FUSE file handle is `client handle * workers + worker`. Other
//! requests go round robin.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use fuser::{
    FileAttr, FileType, Filesystem, KernelConfig, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow,
    fuse_forget_one,
};
use libc::c_int;

use super::attr::{Owner, engine_ino, file_attr, file_type, root_attr};
use super::errno::errno_of;
use super::inodes::{Inodes, ROOT, join};
use super::options::{MAX_IO, MountOptions};
use super::workers::Workers;
use crate::error::Result;
use crate::rpc::client::{Attr, Client, SetAttr, SharedBuf};

/// A reply that can carry an errno.
trait Fail {
    fn fail(self, errno: c_int);
}

macro_rules! fail_by_error {
    ($($t:ty),*) => {$(
        impl Fail for $t {
            fn fail(self, errno: c_int) {
                self.error(errno);
            }
        }
    )*};
}
fail_by_error!(
    ReplyAttr,
    ReplyCreate,
    ReplyData,
    ReplyDirectory,
    ReplyEmpty,
    ReplyEntry,
    ReplyOpen,
    ReplyStatfs,
    ReplyWrite
);

/// One entry of an open directory.
#[derive(Debug)]
struct DirEntry {
    name: String,
    kind: FileType,
    ino: u64,
}

/// What the workers share with the session thread.
#[derive(Debug)]
struct Shared {
    inodes: Mutex<Inodes>,
    /// Open directories: their listing, taken at opendir.
    dirs: Mutex<HashMap<u64, Arc<Vec<DirEntry>>>>,
    next_dir: AtomicU64,
    owner: Owner,
    /// Open files per worker, so a new file goes to the least busy one.
    open_files: Vec<AtomicUsize>,
    attr_ttl: Duration,
    entry_ttl: Duration,
}

impl Shared {
    fn inodes(&self) -> MutexGuard<'_, Inodes> {
        // A panic while holding the lock leaves a table that is still
        // consistent (every update is one statement).
        self.inodes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A file of worker `w` was closed (or failed to open).
    fn closed_on(&self, w: usize) {
        if let Some(c) = self.open_files.get(w) {
            let _ = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(1));
        }
    }

    fn dirs(&self) -> MutexGuard<'_, HashMap<u64, Arc<Vec<DirEntry>>>> {
        self.dirs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The attributes of `path`, remembered as one lookup when `lookup`.
    fn stat(&self, client: &mut Client, path: &str, lookup: bool) -> Result<FileAttr> {
        if path.is_empty() {
            return self.root(client);
        }
        let a = client.stat(path)?;
        Ok(self.attr(path, &a, lookup))
    }

    /// The root's attributes; daemons without a namespace have none.
    fn root(&self, client: &mut Client) -> Result<FileAttr> {
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
    fn attr(&self, path: &str, a: &Attr, lookup: bool) -> FileAttr {
        let mut inodes = self.inodes();
        let ino = if lookup {
            inodes.remember(path, engine_ino(a))
        } else {
            inodes
                .known(path)
                .or(engine_ino(a))
                .unwrap_or_else(|| dir_ino(path))
        };
        file_attr(ino, a, self.owner)
    }
}

/// Who issues the RPCs.
#[derive(Debug)]
pub enum Backend {
    /// Worker threads, each with its own client.
    Workers(Workers),
    /// One client on the session thread: one request at a time, no hand
    /// over between threads (the lowest latency for one program).
    Inline(Box<Client>),
}

/// The file system the kernel talks to.
#[derive(Debug)]
pub struct BenchFs {
    shared: Arc<Shared>,
    backend: Option<Backend>,
    n: u64,
    next_worker: usize,
}

/// The handle the kernel gets for `client_handle` of `worker`.
fn fuse_handle(client_handle: u64, worker: usize, n: u64) -> u64 {
    client_handle * n + worker as u64
}

impl BenchFs {
    /// A file system served by `backend`.
    pub fn new(backend: Backend, options: &MountOptions) -> BenchFs {
        let n = match &backend {
            Backend::Workers(w) => w.len().max(1) as u64,
            Backend::Inline(_) => 1,
        };
        BenchFs {
            shared: Arc::new(Shared {
                inodes: Mutex::new(Inodes::new()),
                dirs: Mutex::new(HashMap::new()),
                next_dir: AtomicU64::new(1),
                owner: Owner::current(),
                open_files: (0..n).map(|_| AtomicUsize::new(0)).collect(),
                attr_ttl: options.attr_timeout,
                entry_ttl: options.entry_timeout,
            }),
            backend: Some(backend),
            n,
            next_worker: 0,
        }
    }

    /// Queues `job` on worker `w`.
    fn on(&mut self, w: usize, job: impl FnOnce(&mut Client, &Shared) + Send + 'static) {
        match &mut self.backend {
            Some(Backend::Workers(workers)) => {
                let shared = Arc::clone(&self.shared);
                workers.send(w, Box::new(move |c: &mut Client| job(c, &shared)));
            }
            Some(Backend::Inline(client)) => job(client, &self.shared),
            None => {}
        }
    }

    /// Queues `job` on the next worker in turn.
    fn on_any(&mut self, job: impl FnOnce(&mut Client, &Shared) + Send + 'static) {
        self.next_worker = self.next_worker.wrapping_add(1);
        self.on(self.next_worker, job);
    }

    /// The worker for a file being opened: the one with the fewest open
    /// files (counted now, given back at release or a failed open).
    fn worker_for_open(&self) -> usize {
        let counts = &self.shared.open_files;
        let w = (0..counts.len())
            .min_by_key(|&i| counts[i].load(Ordering::Relaxed))
            .unwrap_or(0);
        if let Some(c) = counts.get(w) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        w
    }

    /// The worker and client handle of a FUSE file handle.
    fn split(&self, fh: u64) -> (usize, u64) {
        ((fh % self.n) as usize, fh / self.n)
    }

    fn path<R: Fail>(&self, ino: u64, reply: R) -> Option<(String, R)> {
        match self.shared.inodes().path(ino) {
            Some(p) => Some((p, reply)),
            None => {
                reply.fail(libc::ENOENT);
                None
            }
        }
    }

    /// Removes the entry `name` of `parent` with `remove` (unlink or rmdir)
    /// and forgets its path.
    fn remove_child(
        &mut self,
        parent: u64,
        name: &OsStr,
        reply: ReplyEmpty,
        remove: fn(&mut Client, &str) -> Result<()>,
    ) {
        let Some((path, reply)) = self.child(parent, name, reply) else {
            return;
        };
        self.on_any(move |c, s| match remove(c, &path) {
            Ok(()) => {
                s.inodes().unlinked(&path);
                reply.ok();
            }
            Err(e) => reply.error(errno_of(&e)),
        });
    }

    fn child<R: Fail>(&self, parent: u64, name: &OsStr, reply: R) -> Option<(String, R)> {
        match self.shared.inodes().child(parent, name) {
            Ok(p) => Some((p, reply)),
            Err(e) => {
                reply.fail(e);
                None
            }
        }
    }
}

/// The flags a client handle keeps: access mode and synchronous writes.
/// Creation, truncation and appending are the kernel's part.
fn client_flags(flags: i32) -> i32 {
    flags & (libc::O_ACCMODE | libc::O_SYNC | libc::O_DSYNC)
}

impl Filesystem for BenchFs {
    fn init(
        &mut self,
        _req: &Request<'_>,
        config: &mut KernelConfig,
    ) -> std::result::Result<(), c_int> {
        // Each call returns the nearest accepted value on refusal; the
        // kernel's own limit then applies.
        let _ = config.set_max_write(MAX_IO);
        let _ = config.set_max_readahead(MAX_IO);
        let _ = config.set_max_background(64);
        let _ = config.add_capabilities(fuser::consts::FUSE_PARALLEL_DIROPS);
        Ok(())
    }

    fn destroy(&mut self) {
        match self.backend.take() {
            Some(Backend::Workers(w)) => w.stop(),
            Some(Backend::Inline(mut c)) => c.disconnect(),
            None => {}
        }
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let Some((path, reply)) = self.child(parent, name, reply) else {
            return;
        };
        self.on_any(move |c, s| match s.stat(c, &path, true) {
            Ok(attr) => reply.entry(&s.entry_ttl, &attr, 0),
            Err(e) => reply.error(errno_of(&e)),
        });
    }

    fn forget(&mut self, _req: &Request<'_>, ino: u64, nlookup: u64) {
        self.shared.inodes().forget(ino, nlookup);
    }

    fn batch_forget(&mut self, _req: &Request<'_>, nodes: &[fuse_forget_one]) {
        let mut inodes = self.shared.inodes();
        for n in nodes {
            inodes.forget(n.nodeid, n.nlookup);
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        let Some((path, reply)) = self.path(ino, reply) else {
            return;
        };
        self.on_any(move |c, s| match s.stat(c, &path, false) {
            Ok(mut attr) => {
                attr.ino = ino;
                reply.attr(&s.attr_ttl, &attr);
            }
            Err(e) => reply.error(errno_of(&e)),
        });
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<std::time::SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<std::time::SystemTime>,
        _chgtime: Option<std::time::SystemTime>,
        _bkuptime: Option<std::time::SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        let Some((path, reply)) = self.path(ino, reply) else {
            return;
        };
        let set = SetAttr {
            mode: mode.map(|m| m & 0o7777),
            uid,
            gid,
            size,
            atime_unix_ns: atime.map(unix_ns),
            mtime_unix_ns: mtime.map(unix_ns),
        };
        self.on_any(move |c, s| {
            // A size alone is a truncate, which every daemon supports;
            // nothing to change is a stat.
            let others = SetAttr { size: None, ..set };
            let r = match (set.size, others == SetAttr::default()) {
                (None, true) => c.stat(&path),
                (Some(size), true) => c.truncate(&path, size).and_then(|()| c.stat(&path)),
                (_, false) => c.setattr(&path, &set),
            };
            match r {
                Ok(a) => {
                    let mut attr = s.attr(&path, &a, false);
                    attr.ino = ino;
                    reply.attr(&s.attr_ttl, &attr);
                }
                Err(e) => reply.error(errno_of(&e)),
            }
        });
    }

    fn mknod(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        // Only regular files: the engine stores nothing else.
        if mode & libc::S_IFMT != libc::S_IFREG {
            reply.error(libc::EPERM);
            return;
        }
        let Some((path, reply)) = self.child(parent, name, reply) else {
            return;
        };
        let creator = (req.uid(), req.gid());
        self.on_any(move |c, s| {
            c.set_creator(creator.0, creator.1);
            let r = c
                .create(&path, mode & !umask & 0o7777, true)
                .and_then(|h| c.close(h))
                .and_then(|()| s.stat(c, &path, true));
            match r {
                Ok(attr) => reply.entry(&s.entry_ttl, &attr, 0),
                Err(e) => reply.error(errno_of(&e)),
            }
        });
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        self.remove_child(parent, name, reply, Client::unlink);
    }

    fn mkdir(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let Some((path, reply)) = self.child(parent, name, reply) else {
            return;
        };
        let creator = (req.uid(), req.gid());
        self.on_any(move |c, s| {
            c.set_creator(creator.0, creator.1);
            match c.mkdir(&path, mode & !umask & 0o7777) {
                Ok(a) => reply.entry(&s.entry_ttl, &s.attr(&path, &a, true), 0),
                Err(e) => reply.error(errno_of(&e)),
            }
        });
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        self.remove_child(parent, name, reply, Client::rmdir);
    }

    fn rename(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
        reply: ReplyEmpty,
    ) {
        // RENAME_EXCHANGE and RENAME_WHITEOUT have no engine operation.
        if flags & !libc::RENAME_NOREPLACE != 0 {
            reply.error(libc::EINVAL);
            return;
        }
        let Some((from, reply)) = self.child(parent, name, reply) else {
            return;
        };
        let Some((to, reply)) = self.child(newparent, newname, reply) else {
            return;
        };
        self.on_any(move |c, s| {
            if flags & libc::RENAME_NOREPLACE != 0 {
                match c.stat(&to) {
                    Ok(_) => return reply.error(libc::EEXIST),
                    Err(e) if e.errno() == Some(libc::ENOENT) => {}
                    Err(e) => return reply.error(errno_of(&e)),
                }
            }
            match c.rename(&from, &to) {
                Ok(()) => {
                    s.inodes().renamed(&from, &to);
                    reply.ok();
                }
                Err(e) => reply.error(errno_of(&e)),
            }
        });
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        self.on_any(move |c, _| match c.statfs() {
            Ok(t) => reply.statfs(
                t.blocks,
                t.blocks_free,
                t.blocks_avail,
                t.files,
                t.files_free,
                u32::try_from(t.block_size).unwrap_or(4096),
                t.name_max,
                u32::try_from(t.block_size).unwrap_or(4096),
            ),
            Err(e) => reply.error(errno_of(&e)),
        });
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        let Some((path, reply)) = self.path(ino, reply) else {
            return;
        };
        let w = self.worker_for_open();
        let n = self.n;
        self.on(w, move |c, s| match c.open(&path, client_flags(flags), 0) {
            Ok(h) => reply.opened(fuse_handle(h, w, n), 0),
            Err(e) => {
                s.closed_on(w);
                reply.error(errno_of(&e));
            }
        });
    }

    fn create(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let Some((path, reply)) = self.child(parent, name, reply) else {
            return;
        };
        let w = self.worker_for_open();
        let n = self.n;
        let creator = (req.uid(), req.gid());
        self.on(w, move |c, s| {
            c.set_creator(creator.0, creator.1);
            let exclusive = flags & libc::O_EXCL != 0;
            let r = c
                .create(&path, mode & !umask & 0o7777, exclusive)
                .and_then(|h| {
                    if flags & libc::O_TRUNC != 0 && !exclusive {
                        c.truncate(&path, 0)?;
                    }
                    Ok((h, s.stat(c, &path, true)?))
                });
            match r {
                Ok((h, attr)) => reply.created(&s.entry_ttl, &attr, 0, fuse_handle(h, w, n), 0),
                Err(e) => {
                    s.closed_on(w);
                    reply.error(errno_of(&e));
                }
            }
        });
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        let (w, h) = self.split(fh);
        let Ok(offset) = u64::try_from(offset) else {
            reply.error(libc::EINVAL);
            return;
        };
        self.on(w, move |c, _| match c.read(h, offset, size as usize) {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(errno_of(&e)),
        });
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        let (w, h) = self.split(fh);
        let Ok(offset) = u64::try_from(offset) else {
            reply.error(libc::EINVAL);
            return;
        };
        // The kernel's buffer is reused for the next request: copy once.
        let data = data.to_vec();
        self.on(w, move |c, _| {
            match c.write_buf(h, offset, SharedBuf::from_vec(data)) {
                Ok(n) => reply.written(u32::try_from(n).unwrap_or(u32::MAX)),
                Err(e) => reply.error(errno_of(&e)),
            }
        });
    }

    fn flush(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        _fh: u64,
        _lock_owner: u64,
        reply: ReplyEmpty,
    ) {
        // Writes reach the daemons before they are acknowledged: nothing
        // is buffered here.
        reply.ok();
    }

    fn release(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _flags: i32,
        _lock_owner: Option<u64>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let (w, h) = self.split(fh);
        self.on(w, move |c, s| {
            s.closed_on(w);
            match c.close(h) {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno_of(&e)),
            }
        });
    }

    fn fsync(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let (w, h) = self.split(fh);
        self.on(w, move |c, _| match c.fsync(h) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno_of(&e)),
        });
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        let Some((path, reply)) = self.path(ino, reply) else {
            return;
        };
        self.on_any(move |c, s| match c.readdir(&path) {
            Ok(entries) => {
                let list: Vec<DirEntry> = {
                    let inodes = s.inodes();
                    entries
                        .into_iter()
                        .map(|e| {
                            let child = join(&path, &e.name);
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
                let dh = s.next_dir.fetch_add(1, Ordering::Relaxed);
                s.dirs().insert(dh, Arc::new(list));
                reply.opened(dh, 0);
            }
            Err(e) => reply.error(errno_of(&e)),
        });
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        let Some(list) = self.shared.dirs().get(&fh).cloned() else {
            reply.error(libc::EBADF);
            return;
        };
        // Offsets: 0 ".", 1 "..", 2 + i the i-th entry.
        let start = usize::try_from(offset).unwrap_or(0);
        let dots = [(ino, "."), (ROOT, "..")];
        for i in start..list.len() + 2 {
            let next = i as i64 + 1;
            let full = match i {
                0 | 1 => reply.add(dots[i].0, next, FileType::Directory, dots[i].1),
                _ => {
                    let e = &list[i - 2];
                    reply.add(e.ino, next, e.kind, &e.name)
                }
            };
            if full {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _flags: i32,
        reply: ReplyEmpty,
    ) {
        self.shared.dirs().remove(&fh);
        reply.ok();
    }
}

/// A time the kernel sets, in nanoseconds since the epoch ("now" is read
/// here, on the mount's clock).
fn unix_ns(t: TimeOrNow) -> u64 {
    let at = match t {
        TimeOrNow::SpecificTime(t) => t,
        TimeOrNow::Now => std::time::SystemTime::now(),
    };
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A `d_ino` for an entry the kernel has not looked up: any non-zero
/// number serves (`stat` gives the real one).
fn dir_ino(path: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut h);
    h.finish() | 1
}
