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
//! What the threads share, and how open files, unlinked files and hard
//! links are kept, is in [`super::shared`].
//!
//! * `serve`: which thread serves a request.
//! * `resolve`: node ids and handles to paths and open files.
//! * `names`, `attrs`: the jobs of unlink and rename, and of setattr.

mod attrs;
mod names;
mod resolve;
mod serve;

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicI32;
use std::time::Duration;

use fuser::{
    FileType, Filesystem, KernelConfig, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow,
    fuse_forget_one,
};
use libc::c_int;

use super::attr::Owner;
use super::inodes::ROOT;
use super::options::{MAX_IO, MountOptions};
use super::reply::Answer;
use super::shared::Shared;
use super::unlinked::is_hidden;
use super::workers::Workers;
use crate::rpc::client::{Client, SetAttr, SharedBuf};

/// Largest read or write served on the session thread (when no worker
/// threads are configured, every one is).
pub const INLINE_IO: u32 = 128 << 10;

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
            shared: Arc::new(Shared::new(
                Owner::current(),
                options.attr_timeout,
                options.entry_timeout,
            )),
            client: Some(Box::new(client)),
            workers,
            queue: Arc::clone(&queue),
            session_spin: options.session_spin,
            served: [0, 0],
            spins: [0, 0],
        };
        (fs, queue)
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
        self.unmounted();
    }

    fn lookup(&mut self, req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let Some((path, reply)) = self.child(parent, name, reply) else {
            return;
        };
        let thread = req.pid();
        self.serve(move |c, s| {
            let generation = s.walks.generation();
            reply.answer(s.stat(c, &path, true), |r, attr| {
                if s.attr_ttl.is_zero() && !is_hidden(&path) {
                    s.walks.looked_up(thread, attr, generation);
                }
                r.entry(&s.entry_ttl, &attr, 0)
            });
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

    fn getattr(&mut self, req: &Request<'_>, ino: u64, fh: Option<u64>, reply: ReplyAttr) {
        let walked = self.shared.walks.getattr(req.pid(), ino);
        if let Some(attr) = walked.filter(|_| fh.is_none()) {
            reply.attr(&self.shared.attr_ttl, &attr);
            return;
        }
        let Some((_, reply)) = self.path(ino, reply) else {
            return;
        };
        self.serve(move |c, s| {
            let r = s.on_paths(c, ino, |c, p| s.stat(c, p, false));
            reply.answer(r, |reply, (path, mut attr)| {
                attr.ino = ino;
                if is_hidden(&path) {
                    // Unlinked while open (fstat): the hidden name is
                    // none of the file's names.
                    attr.nlink = attr.nlink.saturating_sub(1);
                }
                reply.attr(&s.attr_ttl, &attr);
            });
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
        self.shared.walks.changed();
        let Some((_, reply)) = self.path(ino, reply) else {
            return;
        };
        let set = SetAttr {
            mode: mode.map(|m| m & 0o7777),
            uid,
            gid,
            size,
            atime_unix_ns: atime.map(attrs::unix_ns),
            mtime_unix_ns: mtime.map(attrs::unix_ns),
        };
        self.serve(move |c, s| attrs::setattr(c, s, ino, set, reply));
    }

    fn mknod(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        self.shared.walks.changed();
        // Files, FIFOs, sockets and device nodes. The kernel has checked
        // CAP_MKNOD for a device before this call, and the mount is
        // `nodev`: it refuses to open one.
        let kind = mode & libc::S_IFMT;
        let device = kind == libc::S_IFCHR || kind == libc::S_IFBLK;
        if !device && kind != libc::S_IFREG && kind != libc::S_IFIFO && kind != libc::S_IFSOCK {
            reply.error(libc::EINVAL);
            return;
        }
        let Some((path, reply)) = self.new_child(parent, name, reply) else {
            return;
        };
        let creator = (req.uid(), req.gid());
        if kind != libc::S_IFREG {
            let mode = kind | (mode & !umask & 0o7777);
            self.serve(move |c, s| {
                c.set_creator(creator.0, creator.1);
                let made = if device {
                    c.mknod_device(&path, mode, rdev)
                } else {
                    c.mknod(&path, mode)
                };
                reply.answer(made, |reply, a| {
                    reply.entry(&s.entry_ttl, &s.attr(&path, &a, true), 0);
                });
            });
            return;
        }
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
            reply.answer(r, |reply, attr| reply.entry(&s.entry_ttl, &attr, 0));
        });
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        self.shared.walks.changed();
        let Some((path, reply)) = self.child(parent, name, reply) else {
            return;
        };
        self.serve(move |c, s| names::unlink(c, s, path, reply));
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
        self.shared.walks.changed();
        let Some((path, reply)) = self.new_child(parent, name, reply) else {
            return;
        };
        let creator = (req.uid(), req.gid());
        self.serve(move |c, s| {
            c.set_creator(creator.0, creator.1);
            reply.answer(c.mkdir(&path, mode & !umask & 0o7777), |reply, a| {
                reply.entry(&s.entry_ttl, &s.attr(&path, &a, true), 0);
            });
        });
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        self.shared.walks.changed();
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
        self.shared.walks.changed();
        // Targets are kept as UTF-8 text, like names.
        let Some(target) = target.to_str().map(str::to_owned) else {
            reply.error(libc::EINVAL);
            return;
        };
        let Some((path, reply)) = self.new_child(parent, link_name, reply) else {
            return;
        };
        let creator = (req.uid(), req.gid());
        self.serve(move |c, s| {
            c.set_creator(creator.0, creator.1);
            reply.answer(c.symlink(&target, &path), |reply, a| {
                reply.entry(&s.entry_ttl, &s.attr(&path, &a, true), 0);
            });
        });
    }

    fn readlink(&mut self, _req: &Request<'_>, ino: u64, reply: ReplyData) {
        let Some((_, reply)) = self.path(ino, reply) else {
            return;
        };
        self.serve(move |c, s| {
            let r = s.on_paths(c, ino, |c, p| c.readlink(p));
            reply.answer(r, |reply, (_, (target, _))| reply.data(target.as_bytes()));
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
        self.shared.walks.changed();
        let Some((to, reply)) = self.new_child(newparent, newname, reply) else {
            return;
        };
        let Some((_, reply)) = self.path(ino, reply) else {
            return;
        };
        self.serve(move |c, s| {
            reply.answer(
                s.on_paths(c, ino, |c, from| c.link(from, &to)),
                |reply, (_, a)| {
                    reply.entry(&s.entry_ttl, &s.attr(&to, &a, true), 0);
                },
            );
        });
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
        self.shared.walks.changed();
        // RENAME_EXCHANGE and RENAME_WHITEOUT have no engine operation.
        if flags & !libc::RENAME_NOREPLACE != 0 {
            reply.error(libc::EINVAL);
            return;
        }
        let Some((from, reply)) = self.child(parent, name, reply) else {
            return;
        };
        let Some((to, reply)) = self.new_child(newparent, newname, reply) else {
            return;
        };
        self.serve(move |c, s| names::rename(c, s, from, to, flags, reply));
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        self.serve(move |c, _| {
            reply.answer(c.statfs(), |reply, t| {
                let block_size = u32::try_from(t.block_size).unwrap_or(4096);
                reply.statfs(
                    t.blocks,
                    t.blocks_free,
                    t.blocks_avail,
                    t.files,
                    t.files_free,
                    block_size,
                    t.name_max,
                    block_size,
                );
            });
        });
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        self.shared.walks.changed();
        let Some((_, reply)) = self.path(ino, reply) else {
            return;
        };
        self.serve(move |c, s| {
            let opened = s.on_paths(c, ino, |c, path| {
                c.open(path, client_flags(flags), 0)
                    .and_then(|h| c.detach(h))
            });
            reply.answer(opened, |reply, (_, f)| reply.opened(s.opened(f), 0));
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
        self.shared.walks.changed();
        let Some((path, reply)) = self.new_child(parent, name, reply) else {
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
            reply.answer(r, |reply, (f, attr)| {
                reply.created(&s.entry_ttl, &attr, 0, s.opened(f), 0);
            });
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
            reply.answer(c.read_file_ref(&f, offset, size as usize), |reply, data| {
                reply.data(data);
            });
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
        self.shared.walks.changed();
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
            let r = c.write_file(&f, offset, SharedBuf::from_vec(data));
            reply.answer(r, |reply, n| {
                reply.written(u32::try_from(n).unwrap_or(u32::MAX))
            });
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
        self.shared.walks.changed();
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
        self.shared.walks.changed();
        // The kernel sends no request on a handle after its release; jobs
        // already queued hold their own reference.
        let Some(f) = self.shared.files().remove(&fh) else {
            reply.error(libc::EBADF);
            return;
        };
        self.serve(move |c, s| {
            let r = c.close_file(&f).and_then(|()| s.release_last(c, &f));
            reply.answer(r, |reply, ()| reply.ok());
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
        self.shared.walks.changed();
        let Some((f, reply)) = self.file(fh, reply) else {
            return;
        };
        self.serve(move |c, _| reply.answer(c.fsync_file(&f), |reply, ()| reply.ok()));
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        let Some((path, reply)) = self.path(ino, reply) else {
            return;
        };
        self.serve(move |c, s| {
            reply.answer(c.readdir(&path), |reply, entries| {
                reply.opened(s.opened_dir(&path, entries), 0);
            });
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
