//! What the namespace requests do to the daemon's records
//! (docs/NAMESPACE.md): [`Names`] owns the records, and its ops run under
//! their mutex on a pool thread. A data object's own requests (stat,
//! unlink, setattr with `FLAG_DATA`) are the store's, in `execute.rs`.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::job::{Failure, fail};
use crate::namespace::{
    Changes, CountStep, IdSource, Kind, Namespace, Page, Record, SharedAttrs, split_parent,
};
use crate::rpc::server::clock::unix_now_ns;
use crate::rpc::wire::{
    self, Attr, FileKind, OwnedRequest, Reply, RequestOf, RmdirStep, SET_ATIME, SET_GID, SET_MODE,
    SET_MTIME, SET_SIZE, SET_UID,
};
use crate::sys;

/// The attributes of a record (a file's size, blocks and data times are
/// the data daemons'; a symbolic link's size is its target's length; a
/// hard-linked name's nlink is 0: its count is on its home daemon).
fn record_attr(r: &Record) -> Attr {
    let kind = match r.kind {
        Kind::File => FileKind::File,
        Kind::Dir => FileKind::Dir,
        Kind::Symlink => FileKind::Symlink,
        Kind::Fifo => FileKind::Fifo,
        Kind::Socket => FileKind::Socket,
        Kind::BlockDev => FileKind::BlockDev,
        Kind::CharDev => FileKind::CharDev,
    };
    Attr {
        ino: r.ino,
        kind,
        size: u64::from(r.target_len),
        blocks: 0,
        mode: kind.type_bits() | r.mode,
        uid: r.uid,
        gid: r.gid,
        nlink: if r.linked { 0 } else { r.nlink() },
        atime_unix_ns: r.atime,
        mtime_unix_ns: r.mtime,
        ctime_unix_ns: r.ctime,
    }
}

/// Whether a successful reply of a create, mkdir, link or symlink added a
/// name under the parent (or replaced one): what changes the parent's
/// times. A create that found its file there added none.
fn added_a_name(reply: &Reply<'_>) -> bool {
    match reply {
        Reply::Create { created, .. } => *created,
        Reply::Mkdir(_) | Reply::Link { .. } | Reply::Symlink(_) => true,
        _ => false,
    }
}

/// The target a symlink or link request brought (its payload, checked:
/// UTF-8, no NUL, the length the decoder bounded).
fn link_target<'b>(request: &OwnedRequest, buf: &'b [u8]) -> Result<&'b str, Failure> {
    let target = std::str::from_utf8(buf)
        .map_err(|_| fail(request, libc::EINVAL, "the link target is not UTF-8"))?;
    wire::check_target(target).map_err(|e| fail(request, e.posix_errno(), &e.to_string()))?;
    Ok(target)
}

pub(super) fn pick<T>(mask: u32, bit: u32, v: T) -> Option<T> {
    (mask & bit != 0).then_some(v)
}

/// A link_count add's source attributes as the home keeps them.
fn shared_attrs(a: &wire::SharedAttr) -> SharedAttrs {
    SharedAttrs {
        mode: a.mode,
        uid: a.uid,
        gid: a.gid,
        atime: a.atime_unix_ns,
        mtime: a.mtime_unix_ns,
        ctime: a.ctime_unix_ns,
    }
}

/// The home's shared attributes as a link_count reply carries them.
fn wire_shared(s: &SharedAttrs) -> wire::SharedAttr {
    wire::SharedAttr {
        mode: s.mode,
        uid: s.uid,
        gid: s.gid,
        atime_unix_ns: s.atime,
        mtime_unix_ns: s.mtime,
        ctime_unix_ns: s.ctime,
    }
}

/// The fields of a setattr (or a link_count set) that `mask` names.
fn changes(mask: u32, mode: u32, uid: u32, gid: u32, atime: u64, mtime: u64) -> Changes {
    Changes {
        mode: pick(mask, SET_MODE, mode),
        uid: pick(mask, SET_UID, uid),
        gid: pick(mask, SET_GID, gid),
        resized: mask & SET_SIZE != 0,
        atime: pick(mask, SET_ATIME, atime),
        mtime: pick(mask, SET_MTIME, mtime),
    }
}

/// A readdir's page of entries encoded into `buf` (done without the
/// records' lock: the page is a copy).
fn readdir_reply(
    request: &OwnedRequest,
    page: &Page,
    buf: &mut Vec<u8>,
) -> Result<Reply<'static>, Failure> {
    buf.clear();
    let entries: Vec<wire::DirEntry<'_>> = page
        .entries
        .iter()
        .map(|(name, r)| {
            let a = record_attr(r);
            wire::DirEntry {
                name,
                mode: a.mode,
                ino: a.ino,
            }
        })
        .collect();
    wire::encode_dir_entries(buf, &entries)
        .map_err(|e| fail(request, libc::EINVAL, &e.to_string()))?;
    Ok(Reply::Readdir {
        count: entries.len() as u32,
        next_cursor: page.next_cursor,
        eof: page.eof,
        entries_len: buf.len() as u64,
    })
}

/// A daemon's namespace records, shared by its storage threads.
#[derive(Debug)]
pub(super) struct Names(Mutex<Namespace>);

impl Names {
    /// An empty namespace of daemon `node_id`.
    pub(super) fn new(node_id: u32) -> Names {
        // A failing random source only makes a restarted daemon's ids
        // likelier to repeat an earlier run's.
        let seed = sys::random_u64().unwrap_or_else(|_| unix_now_ns());
        let ids = IdSource::new(node_id, seed);
        let names = Namespace::new(
            ids,
            unix_now_ns(),
            sys::effective_uid(),
            sys::effective_gid(),
        );
        Names(Mutex::new(names))
    }

    /// The records, locked. A panic on another storage thread would poison
    /// the mutex; the records stay consistent (every op checks before it
    /// changes).
    fn lock(&self) -> MutexGuard<'_, Namespace> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records held (the root not counted).
    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Entries of the link table (docs/NAMESPACE.md, "Hard links").
    pub(super) fn link_table_len(&self) -> usize {
        self.lock().link_table_len()
    }

    /// Runs a record op.
    pub(super) fn run(
        &self,
        request: &OwnedRequest,
        buf: &mut Vec<u8>,
    ) -> Result<Reply<'static>, Failure> {
        let now = unix_now_ns();
        let path = request.path();
        let no = |errno: i32| fail(request, errno, "");
        if let RequestOf::Readdir {
            cursor,
            max_entries,
            ..
        } = *request
        {
            let page = self.lock().readdir(path, cursor, max_entries);
            return readdir_reply(request, &page, buf);
        }
        let mut names = self.lock();
        let ns: &mut Namespace = &mut names;
        let parent_here = matches!(
            request,
            RequestOf::Create {
                parent_here: true,
                ..
            } | RequestOf::Mkdir {
                parent_here: true,
                ..
            } | RequestOf::Link {
                parent_here: true,
                ..
            } | RequestOf::Symlink {
                parent_here: true,
                ..
            }
        );
        if parent_here {
            // Under the same lock as the insert: no rmdir can slip between.
            ns.check_parent(split_parent(path).0).map_err(no)?;
        }
        let reply = Self::apply(ns, request, buf, now)?;
        if parent_here && added_a_name(&reply) {
            let subdirs = i32::from(matches!(reply, Reply::Mkdir(_)));
            // Checked just above, under the same lock: it is there.
            let _ = ns.dir_changed(split_parent(path).0, subdirs, now);
        }
        if let (
            RequestOf::Unlink {
                parent_here: true, ..
            },
            Reply::Unlink { .. },
        ) = (request, &reply)
        {
            // An entry went: the parent's stamp, as a check_parent's
            // (best effort there too: a parent gone meanwhile is fine).
            let _ = ns.dir_changed(split_parent(path).0, 0, now);
        }
        drop(names);
        Ok(reply)
    }

    /// A record op on the locked records at `now`.
    fn apply(
        ns: &mut Namespace,
        request: &OwnedRequest,
        buf: &mut Vec<u8>,
        now: u64,
    ) -> Result<Reply<'static>, Failure> {
        let path = request.path();
        let no = |errno: i32| fail(request, errno, "");
        match *request {
            RequestOf::Create {
                mode,
                rdev,
                uid,
                gid,
                exclusive,
                ..
            } => ns
                .create_node(path, mode, rdev, (uid, gid), exclusive, now)
                .map(|(r, created)| Reply::Create {
                    attr: record_attr(&r),
                    created,
                })
                .map_err(no),
            RequestOf::Open { flags, .. } => {
                let r = ns.get(path).ok_or_else(|| no(libc::ENOENT))?;
                let writable = (flags as i32) & libc::O_ACCMODE != libc::O_RDONLY;
                if r.kind == Kind::Dir && writable {
                    return Err(no(libc::EISDIR));
                }
                // Never followed here: as `O_NOFOLLOW` (the kernel follows
                // links on a mount before it opens).
                if r.kind == Kind::Symlink {
                    return Err(no(libc::ELOOP));
                }
                // No data to reach: the kernel opens a FIFO or socket on
                // the mount itself; the native client cannot.
                if r.kind.is_special() {
                    return Err(no(libc::ENXIO));
                }
                Ok(Reply::Open(record_attr(r)))
            }
            RequestOf::Stat { .. } => ns
                .get(path)
                .map(|r| Reply::Stat {
                    attr: record_attr(r),
                    no_data: ns.holds_no_data(r),
                })
                .ok_or_else(|| no(libc::ENOENT)),
            RequestOf::Unlink { ino, .. } => ns
                .unlink(path, ino)
                .map(|r| Reply::Unlink {
                    ino: r.id,
                    linked: r.linked,
                    no_data: r.no_data,
                })
                .map_err(no),
            RequestOf::Mkdir { mode, uid, gid, .. } => ns
                .mkdir(path, mode, (uid, gid), now)
                .map(|r| Reply::Mkdir(record_attr(&r)))
                .map_err(no),
            RequestOf::Rmdir { step, ino, .. } => match step {
                RmdirStep::Mark => ns.rmdir_mark(path),
                RmdirStep::Commit => ns.rmdir_commit(path),
                RmdirStep::Unmark => ns.rmdir_unmark(path),
                RmdirStep::Undo => ns.rmdir_undo(path, ino),
            }
            .map(|()| Reply::Rmdir)
            .map_err(no),
            RequestOf::CheckParent {
                subdir, stamp_only, ..
            } => {
                let subdirs = match (subdir, stamp_only) {
                    (false, _) => 0,
                    (true, false) => 1,
                    (true, true) => -1,
                };
                if !stamp_only {
                    ns.check_parent(path).map_err(no)?;
                }
                ns.dir_changed(path, subdirs, now)
                    .map(|()| Reply::CheckParent)
                    .map_err(no)
            }
            RequestOf::Link {
                record,
                exclusive,
                linked,
                ..
            } => {
                let (target, kind) = match wire::FileKind::of_mode(record.mode) {
                    FileKind::Symlink => (Some(link_target(request, buf)?), Kind::Symlink),
                    FileKind::Fifo => (None, Kind::Fifo),
                    FileKind::Socket => (None, Kind::Socket),
                    FileKind::BlockDev => (None, Kind::BlockDev),
                    FileKind::CharDev => (None, Kind::CharDev),
                    _ => (None, Kind::File),
                };
                let rec = Record {
                    kind,
                    ino: record.ino,
                    mode: crate::namespace::permission_bits(record.mode),
                    uid: record.uid,
                    gid: record.gid,
                    atime: record.atime_unix_ns,
                    mtime: record.mtime_unix_ns,
                    ctime: record.ctime_unix_ns,
                    removing: false,
                    target_len: if kind.is_device() { record.rdev } else { 0 },
                    linked,
                    subdirs: 0,
                };
                ns.link(path, rec, target, exclusive, now)
                    .map(|r| Reply::Link {
                        replaced: r.id,
                        linked: r.linked,
                        name_replaced: r.took_name,
                    })
                    .map_err(no)
            }
            RequestOf::Symlink { uid, gid, .. } => {
                let target = link_target(request, buf)?;
                ns.symlink(path, target, (uid, gid), now)
                    .map(|r| Reply::Symlink(record_attr(&r)))
                    .map_err(no)
            }
            RequestOf::LinkCount {
                ino,
                step,
                mask,
                attr: a,
                ..
            } => {
                let step = match step {
                    wire::CountStep::Data => {
                        return ns
                            .mark_data(ino)
                            .map(|()| Reply::LinkCount {
                                count: 0,
                                attr: None,
                            })
                            .map_err(no);
                    }
                    wire::CountStep::Mark => {
                        return ns
                            .mark_linked(path, ino)
                            .map(|()| Reply::LinkCount {
                                count: 0,
                                attr: None,
                            })
                            .map_err(no);
                    }
                    wire::CountStep::Get => CountStep::Get,
                    wire::CountStep::Add => CountStep::Add(shared_attrs(&a)),
                    wire::CountStep::Drop => CountStep::Drop,
                    wire::CountStep::Undo => CountStep::Undo,
                    wire::CountStep::Set => CountStep::Set(changes(
                        mask,
                        a.mode,
                        a.uid,
                        a.gid,
                        a.atime_unix_ns,
                        a.mtime_unix_ns,
                    )),
                };
                ns.link_count(ino, step, now)
                    .map(|c| Reply::LinkCount {
                        count: u64::from(c.count),
                        attr: c.shared.map(|s| wire_shared(&s)),
                    })
                    .map_err(no)
            }
            RequestOf::Readlink { .. } => {
                let (r, target) = ns.readlink(path).map_err(no)?;
                buf.clear();
                buf.extend_from_slice(target.as_bytes());
                Ok(Reply::Readlink {
                    attr: record_attr(&r),
                    len: buf.len() as u64,
                })
            }
            RequestOf::Setattr {
                mask,
                mode,
                uid,
                gid,
                atime_unix_ns,
                mtime_unix_ns,
                ..
            } => {
                let c = changes(mask, mode, uid, gid, atime_unix_ns, mtime_unix_ns);
                ns.setattr(path, &c, now)
                    .map(|r| Reply::Setattr(record_attr(&r)))
                    .map_err(no)
            }
            _ => Err(no(libc::EINVAL)),
        }
    }
}
