//! The FUSE operations. The session thread resolves a node id to a path
//! and then either serves the request with its own client or hands it to
//! a worker thread (docs/MOUNT.md, "Threads"):
//!
//! * reads and writes larger than [`INLINE_IO`] go to the least busy
//!   worker, so that several programs' large transfers overlap;
//! * everything else is served on the session thread, unless the kernel
//!   already has another request waiting, which then is not held up
//!   behind this one: the request goes to a worker.
//!
//! After a request served on the session thread, the thread may poll
//! `/dev/fuse` for a while (the mount's `session_spin`) before going back
//! to `fuser`'s blocking read, so that a program's next request finds it
//! awake.
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
use std::ffi::OsStr;
use std::os::fd::RawFd;
use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

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
use super::unlinked::{Unlinked, hidden_name, is_hidden};
use super::workers::Workers;
use crate::error::{Error, Result};
use crate::rpc::client::{Attr, Client, FileKind, FileRef, SetAttr, SharedBuf};

/// Largest read or write served on the session thread (when no worker
/// threads are configured, every one is).
pub const INLINE_IO: u32 = 128 << 10;

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
    /// Open files by FUSE file handle.
    files: Mutex<HashMap<u64, Arc<FileRef>>>,
    next_file: AtomicU64,
    /// Open files unlinked or renamed over, under their hidden names.
    /// Held across the rename or remove that changes it, so that an
    /// unlink and the last release of one file do not interleave.
    unlinked: Mutex<Unlinked>,
    owner: Owner,
    attr_ttl: Duration,
    entry_ttl: Duration,
}

impl Shared {
    fn inodes(&self) -> MutexGuard<'_, Inodes> {
        // A panic while holding the lock leaves a table that is still
        // consistent (every update is one statement).
        self.inodes.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn files(&self) -> MutexGuard<'_, HashMap<u64, Arc<FileRef>>> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A FUSE file handle for `file`.
    fn opened(&self, file: FileRef) -> u64 {
        let fh = self.next_file.fetch_add(1, Ordering::Relaxed);
        self.files().insert(fh, Arc::new(file));
        fh
    }

    fn unlinked(&self) -> MutexGuard<'_, Unlinked> {
        self.unlinked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The engine id of `path` if this mount has it open.
    fn open_ino(&self, path: &str) -> Option<u64> {
        let ino = self.inodes().known(path)?;
        self.files().values().any(|f| f.ino == ino).then_some(ino)
    }

    /// The engine id of `path` if this mount has it open and `path` is its
    /// file's only name: removing that name would remove the data, so it
    /// is hidden instead. A name of several is removed at once.
    fn open_only_name(&self, client: &mut Client, path: &str) -> Result<Option<u64>> {
        let Some(ino) = self.open_ino(path) else {
            return Ok(None);
        };
        let a = client.stat(path)?;
        Ok((a.ino != ino || a.nlink <= 1).then_some(ino))
    }

    /// `op` on a path of node `ino`: the first of its paths, or when that
    /// is found missing (another client renamed or removed that name of a
    /// file with several), the next. Returns the path that served.
    fn on_paths<T>(
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
    fn hide(
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
    fn unhide(&self, client: &mut Client, unlinked: &mut Unlinked, path: &str, ino: u64) {
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
    fn release_last(&self, client: &mut Client, file: &FileRef) -> Result<()> {
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

/// The file system the kernel talks to.
#[derive(Debug)]
pub struct BenchFs {
    shared: Arc<Shared>,
    /// The session thread's own client.
    client: Option<Box<Client>>,
    /// Threads for large transfers and for requests that would wait.
    workers: Option<Workers>,
    /// The session's `/dev/fuse` descriptor (-1 until known), polled to
    /// see whether the kernel has more requests waiting.
    queue: Arc<AtomicI32>,
    /// How long the session thread polls for the next request after
    /// serving one itself.
    session_spin: Duration,
    /// Requests served on the session thread and handed to workers
    /// (logged at unmount).
    served: [u64; 2],
    /// Session spins that found the next request, and all of them
    /// (logged at unmount).
    spins: [u64; 2],
}

impl BenchFs {
    /// A file system served by `client` on the session thread and by
    /// `workers`, if any. Set the session's descriptor in the returned
    /// cell once the session exists.
    pub fn new(
        client: Client,
        workers: Option<Workers>,
        options: &MountOptions,
    ) -> (BenchFs, Arc<AtomicI32>) {
        let queue = Arc::new(AtomicI32::new(-1));
        let fs = BenchFs {
            shared: Arc::new(Shared {
                inodes: Mutex::new(Inodes::new()),
                dirs: Mutex::new(HashMap::new()),
                next_dir: AtomicU64::new(1),
                files: Mutex::new(HashMap::new()),
                next_file: AtomicU64::new(1),
                unlinked: Mutex::new(Unlinked::default()),
                owner: Owner::current(),
                attr_ttl: options.attr_timeout,
                entry_ttl: options.entry_timeout,
            }),
            client: Some(Box::new(client)),
            workers,
            queue: Arc::clone(&queue),
            session_spin: options.session_spin,
            served: [0, 0],
            spins: [0, 0],
        };
        (fs, queue)
    }

    /// Serves `job` on the session thread, or on a worker when the kernel
    /// has another request waiting.
    fn serve(&mut self, job: impl FnOnce(&mut Client, &Shared) + Send + 'static) {
        if self.workers.is_some() && requests_waiting(self.queue.load(Ordering::Relaxed)) {
            self.on_worker(job);
        } else {
            self.inline(job);
        }
    }

    /// Serves a transfer of `len` bytes: on a worker when large.
    fn serve_io(&mut self, len: u32, job: impl FnOnce(&mut Client, &Shared) + Send + 'static) {
        if len > INLINE_IO && self.workers.is_some() {
            self.on_worker(job);
        } else {
            self.serve(job);
        }
    }

    fn inline(&mut self, job: impl FnOnce(&mut Client, &Shared)) {
        self.served[0] += 1;
        if let Some(client) = self.client.as_deref_mut() {
            job(client, &self.shared);
        }
        self.spin_for_next();
    }

    /// The reply is out: polls `/dev/fuse` without sleeping for up to
    /// `session_spin`, so that `fuser`'s read which follows finds the next
    /// request there instead of putting the thread to sleep.
    fn spin_for_next(&mut self) {
        let fd = self.queue.load(Ordering::Relaxed);
        if self.session_spin.is_zero() || fd < 0 {
            return;
        }
        self.spins[1] += 1;
        let until = Instant::now() + self.session_spin;
        loop {
            if requests_waiting(fd) {
                self.spins[0] += 1;
                return;
            }
            if Instant::now() >= until {
                return;
            }
            std::hint::spin_loop();
        }
    }

    fn on_worker(&mut self, job: impl FnOnce(&mut Client, &Shared) + Send + 'static) {
        match &self.workers {
            Some(workers) => {
                self.served[1] += 1;
                let shared = Arc::clone(&self.shared);
                workers.send(Box::new(move |c: &mut Client| job(c, &shared)));
            }
            None => self.inline(job),
        }
    }

    /// The open file of FUSE handle `fh`.
    fn file<R: Fail>(&self, fh: u64, reply: R) -> Option<(Arc<FileRef>, R)> {
        match self.shared.files().get(&fh) {
            Some(f) => Some((Arc::clone(f), reply)),
            None => {
                reply.fail(libc::EBADF);
                None
            }
        }
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
        self.serve(move |c, s| match remove(c, &path) {
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
        crate::log_line!(
            "benchfs mount: {} requests served on the session thread, {} by workers",
            self.served[0],
            self.served[1]
        );
        if self.spins[1] > 0 {
            crate::log_line!(
                "benchfs mount: {} of {} session spins found the next request",
                self.spins[0],
                self.spins[1]
            );
        }
        if let Some(w) = self.workers.take() {
            w.stop();
        }
        if let Some(mut c) = self.client.take() {
            // Files still open at unmount were never released: remove
            // the ones unlinked while open.
            for hidden in self.shared.unlinked().drain() {
                if let Err(e) = c.unlink(&hidden) {
                    crate::log_line!("benchfs mount: {hidden} left behind: {e}");
                }
            }
            c.disconnect();
        }
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let Some((path, reply)) = self.child(parent, name, reply) else {
            return;
        };
        self.serve(move |c, s| match s.stat(c, &path, true) {
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
        let Some((_, reply)) = self.path(ino, reply) else {
            return;
        };
        self.serve(
            move |c, s| match s.on_paths(c, ino, |c, p| s.stat(c, p, false)) {
                Ok((path, mut attr)) => {
                    attr.ino = ino;
                    if is_hidden(&path) {
                        // Unlinked while open (fstat): the hidden name is
                        // none of the file's names.
                        attr.nlink = attr.nlink.saturating_sub(1);
                    }
                    reply.attr(&s.attr_ttl, &attr);
                }
                Err(e) => reply.error(errno_of(&e)),
            },
        );
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
        let Some((_, reply)) = self.path(ino, reply) else {
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
        self.serve(move |c, s| {
            // A size alone is a truncate, which every daemon supports;
            // nothing to change is a stat.
            let others = SetAttr { size: None, ..set };
            let r = s.on_paths(c, ino, |c, path| {
                match (set.size, others == SetAttr::default()) {
                    (None, true) => c.stat(path),
                    (Some(size), true) => c.truncate(path, size).and_then(|()| c.stat(path)),
                    (_, false) => c.setattr(path, &set),
                }
            });
            match r {
                Ok((path, a)) => {
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
        self.serve(move |c, s| {
            c.set_creator(creator.0, creator.1);
            let r = c
                .create_file(&path, mode & !umask & 0o7777, true)
                .and_then(|(f, made)| {
                    c.close_file(&f)?;
                    match made {
                        Some(a) => Ok(s.attr(&path, &a, true)),
                        None => s.stat(c, &path, true),
                    }
                });
            match r {
                Ok(attr) => reply.entry(&s.entry_ttl, &attr, 0),
                Err(e) => reply.error(errno_of(&e)),
            }
        });
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let Some((path, reply)) = self.child(parent, name, reply) else {
            return;
        };
        self.serve(move |c, s| {
            let mut unlinked = s.unlinked();
            let open = match s.open_only_name(c, &path) {
                Ok(open) => open,
                Err(e) => return reply.error(errno_of(&e)),
            };
            let r = match open {
                // Already hidden and still open: NFS answers EBUSY too.
                Some(ino) if unlinked.path(ino) == Some(path.as_str()) => {
                    return reply.error(libc::EBUSY);
                }
                Some(ino) => s.hide(c, &mut unlinked, &path, ino),
                None => c.unlink(&path).map(|()| s.inodes().unlinked(&path)),
            };
            match r {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno_of(&e)),
            }
        });
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
        self.serve(move |c, s| {
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

    fn symlink(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        // Targets are kept as UTF-8 text, like names.
        let Some(target) = target.to_str().map(str::to_owned) else {
            reply.error(libc::EINVAL);
            return;
        };
        let Some((path, reply)) = self.child(parent, link_name, reply) else {
            return;
        };
        let creator = (req.uid(), req.gid());
        self.serve(move |c, s| {
            c.set_creator(creator.0, creator.1);
            match c.symlink(&target, &path) {
                Ok(a) => reply.entry(&s.entry_ttl, &s.attr(&path, &a, true), 0),
                Err(e) => reply.error(errno_of(&e)),
            }
        });
    }

    fn readlink(&mut self, _req: &Request<'_>, ino: u64, reply: ReplyData) {
        let Some((_, reply)) = self.path(ino, reply) else {
            return;
        };
        self.serve(move |c, s| match s.on_paths(c, ino, |c, p| c.readlink(p)) {
            Ok((_, (target, _))) => reply.data(target.as_bytes()),
            Err(e) => reply.error(errno_of(&e)),
        });
    }

    fn link(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        newparent: u64,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let Some((to, reply)) = self.child(newparent, newname, reply) else {
            return;
        };
        let Some((_, reply)) = self.path(ino, reply) else {
            return;
        };
        self.serve(
            move |c, s| match s.on_paths(c, ino, |c, from| c.link(from, &to)) {
                Ok((_, a)) => reply.entry(&s.entry_ttl, &s.attr(&to, &a, true), 0),
                Err(e) => reply.error(errno_of(&e)),
            },
        );
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
        self.serve(move |c, s| {
            if flags & libc::RENAME_NOREPLACE != 0 {
                match c.stat(&to) {
                    Ok(_) => return reply.error(libc::EEXIST),
                    Err(e) if e.errno() == Some(libc::ENOENT) => {}
                    Err(e) => return reply.error(errno_of(&e)),
                }
            }
            // A target open here is moved aside first (not atomic: for
            // a moment `to` is absent, as with NFS).
            let mut unlinked = s.unlinked();
            let open = match s.open_only_name(c, &to) {
                Ok(open) => open,
                Err(e) if e.errno() == Some(libc::ENOENT) => None,
                Err(e) => return reply.error(errno_of(&e)),
            };
            let hidden = match open {
                Some(ino) if s.open_ino(&from) != Some(ino) => {
                    if let Err(e) = s.hide(c, &mut unlinked, &to, ino) {
                        return reply.error(errno_of(&e));
                    }
                    Some(ino)
                }
                _ => None,
            };
            match c.rename(&from, &to) {
                Ok(()) => {
                    s.inodes().renamed(&from, &to);
                    if let Some(ino) = s.inodes().known(&to) {
                        unlinked.moved(ino, &to);
                    }
                    reply.ok();
                }
                Err(e) => {
                    if let Some(ino) = hidden {
                        s.unhide(c, &mut unlinked, &to, ino);
                    }
                    reply.error(errno_of(&e));
                }
            }
        });
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        self.serve(move |c, _| match c.statfs() {
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
        let Some((_, reply)) = self.path(ino, reply) else {
            return;
        };
        self.serve(move |c, s| {
            let opened = s.on_paths(c, ino, |c, path| {
                c.open(path, client_flags(flags), 0)
                    .and_then(|h| c.detach(h))
            });
            match opened {
                Ok((_, f)) => reply.opened(s.opened(f), 0),
                Err(e) => reply.error(errno_of(&e)),
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
        let creator = (req.uid(), req.gid());
        self.serve(move |c, s| {
            c.set_creator(creator.0, creator.1);
            let exclusive = flags & libc::O_EXCL != 0;
            // A file this call made is empty: its record is all its
            // attributes, without asking every daemon for its size.
            let r = c
                .create_file(&path, mode & !umask & 0o7777, exclusive)
                .and_then(|(f, made)| match made {
                    Some(a) => Ok((f, s.attr(&path, &a, true))),
                    None => {
                        if flags & libc::O_TRUNC != 0 {
                            c.truncate(&path, 0)?;
                        }
                        Ok((f, s.stat(c, &path, true)?))
                    }
                });
            match r {
                Ok((f, attr)) => reply.created(&s.entry_ttl, &attr, 0, s.opened(f), 0),
                Err(e) => reply.error(errno_of(&e)),
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
        let Some((f, reply)) = self.file(fh, reply) else {
            return;
        };
        let Ok(offset) = u64::try_from(offset) else {
            reply.error(libc::EINVAL);
            return;
        };
        self.serve_io(size, move |c, _| {
            // Straight from the client's read buffer to the kernel.
            match c.read_file_ref(&f, offset, size as usize) {
                Ok(data) => reply.data(data),
                Err(e) => reply.error(errno_of(&e)),
            }
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
        let Some((f, reply)) = self.file(fh, reply) else {
            return;
        };
        let Ok(offset) = u64::try_from(offset) else {
            reply.error(libc::EINVAL);
            return;
        };
        // The kernel's buffer is reused for the next request: copy once.
        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let data = data.to_vec();
        self.serve_io(len, move |c, _| {
            match c.write_file(&f, offset, SharedBuf::from_vec(data)) {
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
        // The kernel sends no request on a handle after its release; jobs
        // already queued hold their own reference.
        let Some(f) = self.shared.files().remove(&fh) else {
            reply.error(libc::EBADF);
            return;
        };
        self.serve(
            move |c, s| match c.close_file(&f).and_then(|()| s.release_last(c, &f)) {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno_of(&e)),
            },
        );
    }

    fn fsync(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let Some((f, reply)) = self.file(fh, reply) else {
            return;
        };
        self.serve(move |c, _| match c.fsync_file(&f) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno_of(&e)),
        });
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        let Some((path, reply)) = self.path(ino, reply) else {
            return;
        };
        self.serve(move |c, s| match c.readdir(&path) {
            Ok(entries) => {
                let list: Vec<DirEntry> = {
                    let inodes = s.inodes();
                    entries
                        .into_iter()
                        .filter(|e| !is_hidden(&e.name))
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

/// Whether the kernel has a request waiting on `/dev/fuse` descriptor `fd`
/// (none when it is not known yet).
fn requests_waiting(fd: RawFd) -> bool {
    fd >= 0 && crate::sys::readable_now(fd)
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
