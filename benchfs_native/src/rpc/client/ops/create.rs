//! Create, mknod and open: a file's record on its metadata owner, and a
//! handle to it.

use std::rc::Rc;

use super::{check_path, data_name, unexpected};
use crate::error::{Error, Result};
use crate::rpc::client::inflight::Answer;
use crate::rpc::client::{Client, FileRef, OpenFile};
use crate::rpc::wire::{Attr, FileKind, Request};

impl Client {
    fn new_handle(&mut self, path: &str, ino: u64, flags: i32) -> u64 {
        let h = self.next_handle;
        self.next_handle += 1;
        self.files.insert(
            h,
            OpenFile {
                path: Rc::from(path),
                ino,
                data: Rc::from(data_name(ino)),
                start: self.placement.data_start(ino),
                flags,
            },
        );
        h
    }

    /// Inserts the file record of `path` on its owner, then checks the
    /// parent (undoing the insert when the parent is gone); returns the
    /// record and whether this call made it.
    fn create_record(
        &mut self,
        path: &str,
        mode: u32,
        rdev: u32,
        exclusive: bool,
    ) -> Result<(Attr, bool)> {
        check_path("create", path, false)?;
        let owner = self.placement.metadata_owner(path);
        let (uid, gid) = self.creator;
        let req = Request::Create {
            path,
            mode,
            rdev,
            uid,
            gid,
            exclusive,
            parent_here: self.parent_here(path),
        };
        let (attr, created) = match self.call_one(owner, &req)? {
            Answer::Created(a, created) => (a, created),
            a => return Err(unexpected("create", &a)),
        };
        if created {
            // The record is this call's own and has no data yet.
            let undo = Request::Unlink {
                path,
                ino: attr.ino,
                data: false,
                parent_here: false,
            };
            self.check_parent_or_undo(owner, path, &undo)?;
        }
        Ok((attr, created))
    }

    /// Creates `path` (empty) on its metadata owner and opens it for
    /// reading and writing; `EEXIST` if it exists and `exclusive`,
    /// `ENOENT` / `ENOTDIR` if its parent is missing / a file.
    pub fn create(&mut self, path: &str, mode: u32, exclusive: bool) -> Result<u64> {
        self.check_connected("create")?;
        let (attr, _) = self.create_record(path, mode, 0, exclusive)?;
        if attr.kind == FileKind::Dir {
            return Err(Error::os(libc::EISDIR, "create", path));
        }
        Ok(self.new_handle(path, attr.ino, libc::O_RDWR | libc::O_CREAT))
    }

    /// Makes the FIFO or socket `path` (`mode`'s type bits `S_IFIFO` or
    /// `S_IFSOCK`, with its permissions): a name with attributes and no
    /// data, as a create of a file that is never opened. `EEXIST`,
    /// `ENOENT` / `ENOTDIR` (the parent), `EPERM` for a device,
    /// `EINVAL` for another type.
    pub fn mknod(&mut self, path: &str, mode: u32) -> Result<Attr> {
        self.check_connected("mknod")?;
        let kind = FileKind::of_mode(mode);
        if !kind.is_special() || kind.is_device() {
            let errno = match mode & libc::S_IFMT {
                libc::S_IFCHR | libc::S_IFBLK => libc::EPERM,
                _ => libc::EINVAL,
            };
            return Err(Error::os(errno, "mknod", format!("{path}: mode {mode:#o}")));
        }
        self.create_record(path, mode, 0, true).map(|(a, _)| a)
    }

    /// Makes the device node `path` (`mode`'s type bits `S_IFBLK` or
    /// `S_IFCHR`) with number `rdev`: a name with attributes, its number
    /// kept as its size. Only for a caller the kernel has checked for
    /// `CAP_MKNOD` (the mount's mknod); no device is ever opened through
    /// the engine. `EINVAL` for another type.
    pub fn mknod_device(&mut self, path: &str, mode: u32, rdev: u32) -> Result<Attr> {
        self.check_connected("mknod")?;
        if !FileKind::of_mode(mode).is_device() {
            return Err(Error::os(
                libc::EINVAL,
                "mknod",
                format!("{path}: mode {mode:#o}"),
            ));
        }
        self.create_record(path, mode, rdev, true).map(|(a, _)| a)
    }

    /// [`Client::create`], detached ([`Client::detach`]): the file, and
    /// its attributes when this call made it (empty: size 0 and no data on
    /// any daemon, so no stat is needed); `None` when it already existed.
    pub fn create_file(
        &mut self,
        path: &str,
        mode: u32,
        exclusive: bool,
    ) -> Result<(FileRef, Option<Attr>)> {
        self.check_connected("create")?;
        let (attr, created) = self.create_record(path, mode, 0, exclusive)?;
        if attr.kind == FileKind::Dir {
            return Err(Error::os(libc::EISDIR, "create", path));
        }
        let file = FileRef {
            path: path.to_owned(),
            ino: attr.ino,
            flags: libc::O_RDWR | libc::O_CREAT,
        };
        Ok((file, created.then_some(attr)))
    }

    /// Opens file `path` with `open(2)` flags: `O_CREAT` creates it (with
    /// `mode`; with `O_EXCL`, `EEXIST` if it exists), `O_TRUNC` empties it.
    /// A directory is `EISDIR` (list it with [`Client::readdir`]).
    pub fn open(&mut self, path: &str, flags: i32, mode: u32) -> Result<u64> {
        self.check_connected("open")?;
        let (attr, created) = if flags & libc::O_CREAT != 0 {
            self.create_record(path, mode, 0, flags & libc::O_EXCL != 0)?
        } else {
            check_path("open", path, false)?;
            let owner = self.placement.metadata_owner(path);
            let req = Request::Open {
                path,
                flags: flags as u32,
            };
            match self.call_one(owner, &req)? {
                Answer::Attr(a) => (a, false),
                a => return Err(unexpected("open", &a)),
            }
        };
        if attr.kind == FileKind::Dir {
            return Err(Error::os(libc::EISDIR, "open", path));
        }
        let handle = self.new_handle(path, attr.ino, flags);
        let writable = flags & libc::O_ACCMODE != libc::O_RDONLY;
        // A file this call created has no data to cut.
        if flags & libc::O_TRUNC != 0 && writable && !created {
            self.truncate_data(attr.ino, 0, path)?;
        }
        Ok(handle)
    }
}
