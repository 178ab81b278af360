//! The namespace operations of the client (docs/NAMESPACE.md): directories,
//! rename, attribute changes and the cluster's totals.

use super::Client;
use super::buf::SharedBuf;
use super::inflight::{Answer, Call};
use super::links::moved_record;
use super::ops::{check_path, unexpected};
use crate::error::{Error, Result};
use crate::namespace::split_parent;
use crate::rpc::wire::{
    Attr, FileKind, MAX_NAME, Request, RmdirStep, SET_ATIME, SET_GID, SET_MODE, SET_MTIME,
    SET_SIZE, SET_UID, SharedAttr, check_target,
};

/// Attribute changes of [`Client::setattr`]; `None` leaves a field as it
/// is. A time of "now" is resolved by the caller into nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SetAttr {
    /// Permission bits (set-user-ID, set-group-ID and sticky are dropped).
    pub mode: Option<u32>,
    /// Owner.
    pub uid: Option<u32>,
    /// Group.
    pub gid: Option<u32>,
    /// Size (files only).
    pub size: Option<u64>,
    /// Last access, nanoseconds since the Unix epoch.
    pub atime_unix_ns: Option<u64>,
    /// Last modification, nanoseconds since the Unix epoch.
    pub mtime_unix_ns: Option<u64>,
}

/// The cluster's totals (`statvfs`), summed over the daemons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatFs {
    /// Unit of the block counts, bytes.
    pub block_size: u64,
    /// Blocks of the data directories' file systems.
    pub blocks: u64,
    /// Free blocks.
    pub blocks_free: u64,
    /// Free blocks for unprivileged users.
    pub blocks_avail: u64,
    /// Namespace records (files and directories).
    pub files: u64,
    /// Free inodes of the data directories' file systems.
    pub files_free: u64,
    /// Longest name.
    pub name_max: u32,
}

impl Client {
    /// The owner of later creates and mkdirs (default: the process's
    /// effective uid and gid).
    pub fn set_creator(&mut self, uid: u32, gid: u32) {
        self.creator = (uid, gid);
    }

    /// Creates directory `path`: `EEXIST` if the name exists, `ENOENT` /
    /// `ENOTDIR` if its parent is missing / a file. The record is inserted
    /// on its owner first, then the parent is checked on the parent's
    /// owner (the insert undone if the parent is gone or being removed).
    pub fn mkdir(&mut self, path: &str, mode: u32) -> Result<Attr> {
        self.check_connected("mkdir")?;
        check_path("mkdir", path, false)?;
        let owner = self.placement.metadata_owner(path);
        let (uid, gid) = self.creator;
        let req = Request::Mkdir {
            path,
            mode,
            uid,
            gid,
            parent_here: self.parent_here(path),
        };
        let attr = match self.call_one(owner, &req)? {
            Answer::Attr(a) => a,
            a => return Err(unexpected("mkdir", &a)),
        };
        let undo = Request::Rmdir {
            path,
            step: RmdirStep::Undo,
            ino: attr.ino,
        };
        self.check_parent_or_undo(owner, path, &undo)?;
        Ok(attr)
    }

    /// Creates `path` and every missing directory above it; an existing
    /// directory is not an error (`mkdir -p`).
    pub fn mkdir_all(&mut self, path: &str, mode: u32) -> Result<()> {
        let mut end = 0;
        while end < path.len() {
            end = path[end..].find('/').map_or(path.len(), |i| end + i);
            match self.mkdir(&path[..end], mode) {
                Err(e) if e.errno() == Some(libc::EEXIST) => {
                    if self.record(&path[..end])?.kind != FileKind::Dir {
                        return Err(Error::os(libc::ENOTDIR, "mkdir", &path[..end]));
                    }
                }
                r => {
                    r?;
                }
            }
            end += 1;
        }
        Ok(())
    }

    /// Removes the empty directory `path`: `ENOTEMPTY`, `ENOTDIR`,
    /// `ENOENT`, `EBUSY` (the root, or another rmdir of it under way).
    /// Marks it on its owner (creates into it are refused from then on),
    /// asks every daemon for one entry under it, then removes it or clears
    /// the mark.
    pub fn rmdir(&mut self, path: &str) -> Result<()> {
        self.check_connected("rmdir")?;
        if path.is_empty() {
            return Err(Error::os(libc::EBUSY, "rmdir", "the root directory"));
        }
        check_path("rmdir", path, false)?;
        let owner = self.placement.metadata_owner(path);
        let step = |step| Request::Rmdir { path, step, ino: 0 };
        self.call_one(owner, &step(RmdirStep::Mark))?;
        let children = self.list(path, 1);
        let verdict = match children {
            Ok(c) if c.is_empty() => Ok(()),
            Ok(_) => Err(Error::os(libc::ENOTEMPTY, "rmdir", path)),
            Err(e) => Err(e),
        };
        match verdict {
            Ok(()) => {
                self.call_one(owner, &step(RmdirStep::Commit))?;
                self.parent_changed(path, true);
                Ok(())
            }
            Err(e) => {
                let _ = self.call_one(owner, &step(RmdirStep::Unmark));
                Err(e)
            }
        }
    }

    /// Creates the symbolic link `path` to `target`, kept as given (never
    /// resolved: a dangling or relative target is fine). `EEXIST` if the
    /// name exists, `ENOENT` / `ENOTDIR` if its parent is missing / not a
    /// directory, `ENAMETOOLONG` for a target over 4095 bytes, `ENOENT`
    /// for an empty one. Inserted on its owner, then the parent checked,
    /// as a create.
    pub fn symlink(&mut self, target: &str, path: &str) -> Result<Attr> {
        self.check_connected("symlink")?;
        check_path("symlink", path, false)?;
        check_target(target)
            .map_err(|e| Error::os(e.posix_errno(), "symlink", format!("{path}: {e}")))?;
        let owner = self.placement.metadata_owner(path);
        let (uid, gid) = self.creator;
        let req = Request::Symlink {
            path,
            uid,
            gid,
            len: target.len() as u64,
            parent_here: self.parent_here(path),
        };
        let attr = match self.call_with_target(owner, &req, target)? {
            Answer::Attr(a) => a,
            a => return Err(unexpected("symlink", &a)),
        };
        let undo = Request::Unlink {
            path,
            ino: attr.ino,
            data: false,
            parent_here: false,
        };
        self.check_parent_or_undo(owner, path, &undo)?;
        Ok(attr)
    }

    /// The target of symbolic link `path` and the link's attributes.
    /// `EINVAL` if `path` is not a link, `ENOENT`.
    pub fn readlink(&mut self, path: &str) -> Result<(String, Attr)> {
        self.check_connected("readlink")?;
        check_path("readlink", path, false)?;
        let owner = self.placement.metadata_owner(path);
        match self.call_one(owner, &Request::Readlink { path })? {
            Answer::Link(attr, target) => Ok((target, attr)),
            a => Err(unexpected("readlink", &a)),
        }
    }

    /// One call carrying a link target as its payload.
    pub(super) fn call_with_target(
        &mut self,
        node: u32,
        req: &Request<'_>,
        target: &str,
    ) -> Result<Answer> {
        let mut buf = SharedBuf::from_vec(target.as_bytes().to_vec());
        let call = Call::new(&self.conn, node, req, 0)?.with_payload(buf.piece(0, target.len()));
        let mut out = self.window.run_all(&self.conn, vec![call], |_| false)?;
        match out.pop() {
            Some(o) => o.result,
            None => Err(Error::os(libc::EIO, "rpc", "no outcome")),
        }
    }

    /// Renames file or symbolic link `from` to `to`, replacing a file or
    /// link there (a file's data is then removed); no data moves. A
    /// directory source is `EXDEV`, a directory target `EISDIR`. The
    /// record is inserted under `to` first (the parent of `to` then
    /// checked only if no name was replaced), then removed under `from`
    /// (docs/NAMESPACE.md); a link's target goes with its record.
    pub fn rename(&mut self, from: &str, to: &str) -> Result<()> {
        self.check_connected("rename")?;
        check_path("rename", from, false)?;
        check_path("rename", to, false)?;
        let (src, target) = self.moving_source(from, || {
            Error::os(
                libc::EXDEV,
                "rename",
                format!("{from}: directories are not renamed (docs/NAMESPACE.md)"),
            )
        })?;
        if from == to {
            return Ok(());
        }
        // A name's owner reports nlink 0 for one of several names.
        let linked = src.nlink == 0;
        let to_owner = self.placement.metadata_owner(to);
        let link = Request::Link {
            path: to,
            record: moved_record(&src),
            target_len: target.len() as u64,
            parent_here: self.parent_here(to),
            exclusive: false,
            linked,
        };
        let answer = if target.is_empty() {
            self.call_one(to_owner, &link)?
        } else {
            self.call_with_target(to_owner, &link, &target)?
        };
        let (replaced, replaced_linked, name_replaced) = match answer {
            Answer::Replaced { id, linked, name } => (id, linked, name),
            a => return Err(unexpected("rename", &a)),
        };
        // `to` is another name of the same file: POSIX's rename does
        // nothing, and both names stay.
        if replaced == src.ino {
            return Ok(());
        }
        // A replaced name (a file, a link, one of several names) kept the
        // parent non-empty throughout: no rmdir can have removed it, and
        // an undo would lose the replaced name with the moved record.
        // Only when nothing was there is the parent checked, as a create's.
        if !name_replaced {
            let undo = Request::Unlink {
                path: to,
                ino: src.ino,
                data: false,
                parent_here: false,
            };
            self.check_parent_or_undo(to_owner, to, &undo)?;
        } else if !self.parent_here(to) {
            self.parent_changed(to, false);
        }
        let from_owner = self.placement.metadata_owner(from);
        let unlink = Request::Unlink {
            path: from,
            ino: src.ino,
            data: false,
            parent_here: false,
        };
        match self.call_one(from_owner, &unlink) {
            // Gone already: another client renamed or removed it meanwhile.
            Err(e) if e.errno() == Some(libc::ENOENT) => {}
            r => {
                r?;
                if linked {
                    // The file's ctime is its home's: a set of nothing
                    // stamps it.
                    self.touch_shared(src.ino, to);
                }
                if split_parent(from).0 != split_parent(to).0 {
                    self.parent_changed(from, false);
                }
            }
        }
        self.settle_removed(replaced, replaced_linked, to)
    }

    /// Changes the attributes of `path` ("" = the root); returns the new
    /// attributes (as [`Client::stat`]). A size truncates the file's data
    /// on every daemon; times are set on the record and on the file's
    /// backing files, so a later write still moves the modification time.
    /// For one of several names of a file, mode, owner and times are the
    /// file's, kept by its home daemon: the change is made there too.
    pub fn setattr(&mut self, path: &str, set: &SetAttr) -> Result<Attr> {
        self.check_connected("setattr")?;
        check_path("setattr", path, true)?;
        let mut mask = 0;
        for (on, bit) in [
            (set.mode.is_some(), SET_MODE),
            (set.uid.is_some(), SET_UID),
            (set.gid.is_some(), SET_GID),
            (set.size.is_some(), SET_SIZE),
            (set.atime_unix_ns.is_some(), SET_ATIME),
            (set.mtime_unix_ns.is_some(), SET_MTIME),
        ] {
            if on {
                mask |= bit;
            }
        }
        fn req<'p>(p: &'p str, set: &SetAttr, mask: u32, data: bool) -> Request<'p> {
            Request::Setattr {
                path: p,
                mask,
                mode: set.mode.unwrap_or(0),
                uid: set.uid.unwrap_or(0),
                gid: set.gid.unwrap_or(0),
                size: set.size.unwrap_or(0),
                atime_unix_ns: set.atime_unix_ns.unwrap_or(0),
                mtime_unix_ns: set.mtime_unix_ns.unwrap_or(0),
                data,
            }
        }
        let owner = self.placement.metadata_owner(path);
        let rec = match self.call_one(owner, &req(path, set, mask, false))? {
            Answer::Attr(a) => a,
            a => return Err(unexpected("setattr", &a)),
        };
        if rec.kind == FileKind::File {
            if let Some(size) = set.size {
                self.truncate_data(rec.ino, size, path)?;
            }
            let times = mask & (SET_ATIME | SET_MTIME);
            if times != 0 {
                self.fan_out_data(rec.ino, path, |p| req(p, set, times, true))?;
            }
        }
        // One of several names: the change is the file's, on its home.
        let values = SharedAttr {
            mode: set.mode.unwrap_or(0) & 0o7777,
            uid: set.uid.unwrap_or(0),
            gid: set.gid.unwrap_or(0),
            atime_unix_ns: set.atime_unix_ns.unwrap_or(0),
            mtime_unix_ns: set.mtime_unix_ns.unwrap_or(0),
            ctime_unix_ns: 0,
        };
        let mut attr = self.set_shared(rec, mask, values, path)?;
        if attr.kind == FileKind::File {
            self.fill_data_attr(&mut attr, path)?;
        }
        Ok(attr)
    }

    /// The cluster's totals: the file systems of the daemons' data
    /// directories (each counted once, however many daemons share it, in
    /// units of the first daemon's block size) and the namespace records.
    pub fn statfs(&mut self) -> Result<StatFs> {
        self.check_connected("statfs")?;
        let calls = (0..self.placement.nodes())
            .map(|node| Call::new(&self.conn, node, &Request::Statfs, u64::from(node)))
            .collect::<Result<Vec<_>>>()?;
        let out = self.window.run_all(&self.conn, calls, |_| false)?;
        let mut bytes = [0u128; 3];
        let mut total = StatFs {
            files: 1, // the root
            name_max: MAX_NAME as u32,
            ..StatFs::default()
        };
        let mut counted = std::collections::HashSet::new();
        for o in out {
            let f = match o.result? {
                Answer::Statfs(f) => f,
                a => return Err(unexpected("statfs", &a)),
            };
            total.files = total.files.saturating_add(f.files);
            total.name_max = total.name_max.min(f.name_max);
            if !counted.insert(f.fs_id) {
                continue;
            }
            if total.block_size == 0 {
                total.block_size = f.block_size.max(1);
            }
            let bs = u128::from(f.block_size);
            bytes[0] += u128::from(f.blocks) * bs;
            bytes[1] += u128::from(f.blocks_free) * bs;
            bytes[2] += u128::from(f.blocks_avail) * bs;
            total.files_free = total.files_free.saturating_add(f.files_free);
        }
        let unit = u128::from(total.block_size.max(1));
        let blocks = |b: u128| u64::try_from(b / unit).unwrap_or(u64::MAX);
        total.blocks = blocks(bytes[0]);
        total.blocks_free = blocks(bytes[1]);
        total.blocks_avail = blocks(bytes[2]);
        Ok(total)
    }
}
