//! The POSIX-like operations and where they go (the client part of the
//! contract, docs/NAMESPACE.md): create, open, stat and unlink to the
//! metadata owner of the path (a create then checks the parent on the
//! parent's owner); writes and reads split at chunk borders, each piece to
//! its chunk's owner (placement of the file id), up to `max_in_flight` at
//! once; a file's size, fsync, truncate and data removal to every daemon
//! (`ENOENT` of daemons that hold nothing of the file ignored); readdir
//! the union over every daemon of the entries whose parent is the
//! directory.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::namespace::split_parent;

use super::buf::SharedBuf;
use super::inflight::{Answer, Call, Entry, Outcome};
use super::split::{split, written_from_start};
use super::{Client, FileRef, OpenFile};
use crate::error::{Error, Result};
use crate::rpc::wire::{Attr, FileKind, Request};

/// Entries asked for per readdir page.
const READDIR_PAGE: u32 = 4096;

/// A file's data over the daemons.
#[derive(Debug, Default)]
struct DataAttr {
    size: u64,
    blocks: u64,
    mtime: Option<u64>,
}
/// The tag of a call sent beside a fan-out (whose calls are tagged with
/// their node).
const BESIDE_TAG: u64 = u64::MAX;

/// Largest single read or write (the wire's payload limit).
pub const MAX_IO: usize = 1 << 30;

/// Largest read buffer a client keeps for its next read (a larger one is
/// made for its read and dropped after it).
const KEPT_READ_BUF: usize = 4 << 20;

fn enoent(o: &Outcome) -> bool {
    o.errno() == Some(libc::ENOENT)
}

/// The name of the data object of file `id` on the data daemons.
pub(super) fn data_name(id: u64) -> String {
    format!("@{id:016x}")
}

/// Checks a path given by a caller ("" = the root when `root_ok`):
/// `ENAMETOOLONG` for a name over 255 bytes or a path of 4096 or more,
/// before any request is sent.
pub(super) fn check_path(op: &'static str, path: &str, root_ok: bool) -> Result<()> {
    if path.is_empty() && root_ok {
        return Ok(());
    }
    crate::storage::layout::validate(path)?;
    crate::namespace::check_name_lengths(path).map_err(|errno| {
        Error::os(
            errno,
            op,
            format!("{} ({} bytes)", shortened(path), path.len()),
        )
    })
}

/// The start of a long path, for an error message of one line.
fn shortened(path: &str) -> String {
    match path.char_indices().nth(64) {
        Some((i, _)) => format!("{}...", &path[..i]),
        None => path.to_owned(),
    }
}

pub(super) fn unexpected(what: &str, a: &Answer) -> Error {
    Error::os(
        libc::EBADMSG,
        "rpc",
        format!("{what}: unexpected answer {a:?}"),
    )
}

impl Client {
    pub(super) fn check_connected(&self, op: &'static str) -> Result<()> {
        if self.conn.is_closed() {
            return Err(Error::os(libc::ENOTCONN, op, "the client is disconnected"));
        }
        Ok(())
    }

    pub(super) fn file(&self, handle: u64, op: &'static str) -> Result<OpenFile> {
        self.files
            .get(&handle)
            .cloned()
            .ok_or_else(|| Error::os(libc::EBADF, op, format!("handle {handle}")))
    }

    /// One call, its answer.
    pub(super) fn call_one(&mut self, node: u32, request: &Request<'_>) -> Result<Answer> {
        let call = Call::new(&self.conn, node, request, 0)?;
        let mut out = self.window.run_all(&self.conn, vec![call], |_| false)?;
        match out.pop() {
            Some(o) => o.result,
            None => Err(Error::os(libc::EIO, "rpc", "no outcome")),
        }
    }

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

    /// Whether `path`'s metadata owner also owns its parent (the root's
    /// owner for a top-level name); then it checks the parent itself and
    /// stamps its times, with the insert: `FLAG_PARENT_HERE`.
    pub(super) fn parent_here(&self, path: &str) -> bool {
        let (parent, _) = split_parent(path);
        self.placement.metadata_owner(parent) == self.placement.metadata_owner(path)
    }

    /// Succeeds if `path`'s parent takes new entries (`ENOENT` missing or
    /// being removed, `ENOTDIR` a file), and stamps its mtime and ctime
    /// (`subdir`: one subdirectory more): the step after an insert.
    pub(super) fn check_parent(&mut self, path: &str, subdir: bool) -> Result<()> {
        if self.parent_here(path) {
            return Ok(());
        }
        let (parent, _) = split_parent(path);
        let owner = self.placement.metadata_owner(parent);
        let req = Request::CheckParent {
            path: parent,
            subdir,
            stamp_only: false,
        };
        self.call_one(owner, &req).map(drop)
    }

    /// Stamps the mtime and ctime of `path`'s parent after its entry went
    /// or was replaced (`subdir`: a directory went, one subdirectory
    /// less). Best effort: the removal is done whatever this answers (a
    /// parent removed meanwhile, a daemon gone).
    pub(super) fn parent_changed(&mut self, path: &str, subdir: bool) {
        let (parent, _) = split_parent(path);
        let owner = self.placement.metadata_owner(parent);
        let req = Request::CheckParent {
            path: parent,
            subdir,
            stamp_only: true,
        };
        let _ = self.call_one(owner, &req);
    }

    /// [`Self::check_parent`] after this call inserted `path`'s record on
    /// `owner`: if the parent does not take it, `undo` removes the record
    /// again and the check's error is returned. A mkdir's undo (an rmdir
    /// step) makes the check count a subdirectory.
    pub(super) fn check_parent_or_undo(
        &mut self,
        owner: u32,
        path: &str,
        undo: &Request<'_>,
    ) -> Result<()> {
        let subdir = matches!(undo, Request::Rmdir { .. });
        let checked = self.check_parent(path, subdir);
        if checked.is_err() {
            let _ = self.call_one(owner, undo);
        }
        checked
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

    /// Writes `data` at `offset` of the open file; returns the bytes
    /// written.
    pub fn write(&mut self, handle: u64, offset: u64, data: &[u8]) -> Result<u64> {
        if data.len() > MAX_IO {
            return Err(Error::invalid(
                "data",
                format!("{} bytes, at most {MAX_IO}", data.len()),
            ));
        }
        self.write_buf(handle, offset, SharedBuf::from_vec(data.to_vec()))
    }

    /// [`Client::write`] of a whole [`SharedBuf`] (no copy).
    pub fn write_buf(&mut self, handle: u64, offset: u64, buf: SharedBuf) -> Result<u64> {
        self.check_connected("write")?;
        let f = self.file(handle, "write")?;
        self.write_open(&f, offset, buf)
    }

    /// [`Client::write_buf`] to a file opened by any client.
    pub fn write_file(&mut self, file: &FileRef, offset: u64, buf: SharedBuf) -> Result<u64> {
        self.check_connected("write")?;
        let f = self.open_file(file);
        self.write_open(&f, offset, buf)
    }

    fn write_open(&mut self, f: &OpenFile, offset: u64, mut buf: SharedBuf) -> Result<u64> {
        if f.flags & libc::O_ACCMODE == libc::O_RDONLY {
            return Err(Error::os(
                libc::EBADF,
                "write",
                format!("{} (opened read-only)", f.path),
            ));
        }
        let len = buf.len();
        if offset.checked_add(len as u64).is_none() {
            return Err(Error::invalid(
                "offset",
                format!("{offset} + {len} overflows"),
            ));
        }
        let sync = f.flags & (libc::O_SYNC | libc::O_DSYNC) != 0;
        let mut calls = Vec::new();
        let pieces: Vec<_> = split(offset, len, self.conn.chunk_size).collect();
        for (i, p) in pieces.iter().enumerate() {
            let node = self.placement.chunk_owner_from(f.start, p.chunk);
            let req = Request::Write {
                path: &f.data,
                chunk: p.chunk,
                offset: p.chunk_offset,
                len: p.len as u64,
                sync,
            };
            let piece = buf.piece(p.buf_offset, p.len);
            let call = Call::named(&self.conn, node, &req, i as u64, &f.path)?;
            calls.push(call.with_payload(piece));
        }
        let out = self.window.run_all(&self.conn, calls, |_| false)?;
        // Bytes each piece wrote, or why it wrote none.
        let mut done: Vec<Result<u64>> = pieces.iter().map(|_| Ok(0)).collect();
        for o in out {
            let Some(slot) = done.get_mut(o.tag as usize) else {
                continue;
            };
            *slot = match o.result {
                Ok(Answer::Written(n)) => Ok(n),
                Ok(a) => return Err(unexpected("write", &a)),
                Err(e) => Err(e),
            };
        }
        written_from_start(&pieces, done)
    }

    /// Reads up to `len` bytes at `offset` of the open file; shorter at its
    /// end, holes read as zeros.
    pub fn read(&mut self, handle: u64, offset: u64, len: usize) -> Result<Vec<u8>> {
        self.check_connected("read")?;
        let f = self.file(handle, "read")?;
        self.read_open(&f, offset, len)
    }

    /// [`Client::read`] of a file opened by any client.
    pub fn read_file(&mut self, file: &FileRef, offset: u64, len: usize) -> Result<Vec<u8>> {
        self.check_connected("read")?;
        let f = self.open_file(file);
        self.read_open(&f, offset, len)
    }

    /// [`Client::read_file`] without a copy: the bytes stay in the
    /// client's read buffer, valid until its next call. For a caller that
    /// passes them straight on (the mount's reply to the kernel).
    pub fn read_file_ref(&mut self, file: &FileRef, offset: u64, len: usize) -> Result<&[u8]> {
        self.check_connected("read")?;
        let f = self.open_file(file);
        let n = self.read_kept(&f, offset, len)?;
        self.kept_bytes(n)
    }

    fn read_open(&mut self, f: &OpenFile, offset: u64, len: usize) -> Result<Vec<u8>> {
        let n = self.read_kept(f, offset, len)?;
        let data = self.kept_bytes(n)?.to_vec();
        if len > KEPT_READ_BUF {
            self.read_buf = None;
        }
        Ok(data)
    }

    /// The first `n` bytes of the read buffer.
    fn kept_bytes(&self, n: usize) -> Result<&[u8]> {
        self.read_buf
            .as_ref()
            .and_then(SharedBuf::bytes)
            .and_then(|b| b.get(..n))
            .ok_or_else(|| Error::os(libc::EIO, "read", "the read buffer is still in use"))
    }

    /// A buffer of at least `len` bytes for a read: the kept one when it is
    /// large enough and no request of a timed-out read still holds it.
    fn take_read_buf(&mut self, len: usize) -> SharedBuf {
        match self.read_buf.take() {
            Some(b) if b.len() >= len && b.is_exclusive() => b,
            _ => SharedBuf::zeroed(len),
        }
    }

    /// Reads into the read buffer (kept in `self.read_buf`); how many bytes
    /// of it are the file's. Pieces a daemon answered short, or not at all
    /// (it holds nothing of the file), are zeroed: the buffer is reused, so
    /// a hole must not show an earlier read's bytes.
    fn read_kept(&mut self, f: &OpenFile, offset: u64, len: usize) -> Result<usize> {
        if f.flags & libc::O_ACCMODE == libc::O_WRONLY {
            return Err(Error::os(
                libc::EBADF,
                "read",
                format!("{} (opened write-only)", f.path),
            ));
        }
        if len > MAX_IO {
            return Err(Error::invalid(
                "length",
                format!("{len} bytes, at most {MAX_IO}"),
            ));
        }
        if offset.checked_add(len as u64).is_none() {
            return Err(Error::invalid(
                "offset",
                format!("{offset} + {len} overflows"),
            ));
        }
        let mut buf = self.take_read_buf(len);
        let pieces: Vec<_> = split(offset, len, self.conn.chunk_size).collect();
        let mut calls = Vec::with_capacity(pieces.len());
        for (i, p) in pieces.iter().enumerate() {
            let node = self.placement.chunk_owner_from(f.start, p.chunk);
            let req = Request::Read {
                path: &f.data,
                chunk: p.chunk,
                offset: p.chunk_offset,
                len: p.len as u64,
            };
            let piece = buf.piece(p.buf_offset, p.len);
            let call = Call::named(&self.conn, node, &req, i as u64, &f.path)?;
            calls.push(call.with_dest(piece));
        }
        // A daemon without a backing file holds only holes of this range.
        let out = self.window.run_all(&self.conn, calls, enoent)?;
        let bytes = buf.bytes_mut().ok_or_else(|| {
            Error::os(
                libc::EIO,
                "read",
                format!("{}: buffer still in use", f.path),
            )
        })?;
        // Bytes each piece received; one without an answer received none.
        let mut filled = vec![0usize; pieces.len()];
        for o in &out {
            let Some(slot) = filled.get_mut(o.tag as usize) else {
                continue;
            };
            *slot = match &o.result {
                Ok(Answer::Read(n)) => usize::try_from(*n).unwrap_or(usize::MAX),
                Ok(a) => return Err(unexpected("read", a)),
                Err(_) => 0,
            };
        }
        let mut short = false;
        for (p, &n) in pieces.iter().zip(&filled) {
            if n < p.len {
                short = true;
                if let Some(hole) = bytes.get_mut(p.buf_offset + n..p.buf_offset + p.len) {
                    hole.fill(0);
                }
            }
        }
        self.read_buf = Some(buf);
        if short {
            let size = self.data_attr(f.ino, &f.path)?.size;
            let end = size.min(offset + len as u64);
            return Ok(end.saturating_sub(offset) as usize);
        }
        Ok(len)
    }

    /// Makes the open file durable on every daemon.
    pub fn fsync(&mut self, handle: u64) -> Result<()> {
        self.check_connected("fsync")?;
        let f = self.file(handle, "fsync")?;
        self.fsync_data(f.ino, &f.path)
    }

    /// [`Client::fsync`] of a file opened by any client.
    pub fn fsync_file(&mut self, file: &FileRef) -> Result<()> {
        self.check_connected("fsync")?;
        self.fsync_data(file.ino, &file.path)
    }

    fn fsync_data(&mut self, ino: u64, file: &str) -> Result<()> {
        self.fan_out_data(ino, file, |p| Request::Fsync {
            path: p,
            datasync: false,
        })
        .map(drop)
    }

    /// Closes the handle (after an fsync when the daemons' durability is
    /// `fsync_on_close`, or the client was told so).
    pub fn close(&mut self, handle: u64) -> Result<()> {
        let f = self.file(handle, "close")?;
        let writable = f.flags & libc::O_ACCMODE != libc::O_RDONLY;
        let sync = writable && !self.conn.is_closed() && self.fsync_on_close()?;
        let r = if sync { self.fsync(handle) } else { Ok(()) };
        self.files.remove(&handle);
        r
    }

    /// Takes an open handle out of this client: the returned [`FileRef`]
    /// serves any client of the same daemons (it holds no daemon state),
    /// and [`Client::close_file`] closes it.
    pub fn detach(&mut self, handle: u64) -> Result<FileRef> {
        let f = self
            .files
            .remove(&handle)
            .ok_or_else(|| Error::os(libc::EBADF, "detach", format!("handle {handle}")))?;
        Ok(FileRef {
            path: f.path.to_string(),
            ino: f.ino,
            flags: f.flags,
        })
    }

    /// [`Client::close`] of a detached file: an fsync when closing a
    /// written file asks for one.
    pub fn close_file(&mut self, file: &FileRef) -> Result<()> {
        let writable = file.flags & libc::O_ACCMODE != libc::O_RDONLY;
        if writable && !self.conn.is_closed() && self.fsync_on_close()? {
            return self.fsync_file(file);
        }
        Ok(())
    }

    /// The per-call form of a detached file.
    fn open_file(&self, f: &FileRef) -> OpenFile {
        OpenFile {
            path: Rc::from(f.path.as_str()),
            ino: f.ino,
            data: Rc::from(data_name(f.ino)),
            start: self.placement.data_start(f.ino),
            flags: f.flags,
        }
    }

    /// Whether closing a written file fsyncs it first.
    pub fn fsync_on_close(&mut self) -> Result<bool> {
        if let Some(v) = self.fsync_on_close {
            return Ok(v);
        }
        let json = self.stats(0)?;
        let v: Option<serde_json::Value> = serde_json::from_str(&json).ok();
        let durability = v.as_ref().and_then(|v| {
            v.get("durability")
                .or_else(|| v.get("config").and_then(|c| c.get("durability")))
                .and_then(serde_json::Value::as_str)
        });
        let on = durability == Some("fsync_on_close");
        self.fsync_on_close = Some(on);
        Ok(on)
    }

    /// The record of `path` ("" = the root) from its metadata owner.
    pub(super) fn record(&mut self, path: &str) -> Result<Attr> {
        check_path("stat", path, true)?;
        let owner = self.placement.metadata_owner(path);
        match self.call_one(owner, &Request::Stat { path, data: false })? {
            Answer::Attr(a) => Ok(a),
            a => Err(unexpected("stat", &a)),
        }
    }

    /// Size, blocks and times of data object `data` over every daemon:
    /// the largest size and modification time, the blocks summed; `None`
    /// for the times when no daemon holds any of it.
    fn data_attr(&mut self, ino: u64, file: &str) -> Result<DataAttr> {
        let out = self.fan_out_data(ino, file, |p| Request::Stat {
            path: p,
            data: true,
        })?;
        let mut d = DataAttr::default();
        for o in out {
            if let Ok(Answer::Attr(a)) = o.result {
                d.size = d.size.max(a.size);
                d.blocks = d.blocks.saturating_add(a.blocks);
                d.mtime = Some(d.mtime.unwrap_or(0).max(a.mtime_unix_ns));
            }
        }
        Ok(d)
    }

    /// Attributes of `path` ("" = the root): the record from its metadata
    /// owner (a hard-linked name's count, mode, owner and times from the
    /// file's home daemon); for a file, its size (the largest of the
    /// daemons' backing files), blocks (their sum) and modification time
    /// (the latest of them, the record's when no daemon holds data) from
    /// every daemon.
    pub fn stat(&mut self, path: &str) -> Result<Attr> {
        self.check_connected("stat")?;
        let record = self.record(path)?;
        let mut attr = self.with_shared(record, path)?;
        if attr.kind == FileKind::File {
            self.fill_data_attr(&mut attr, path)?;
        }
        Ok(attr)
    }

    /// Size, blocks and times of file `attr` from every daemon's data.
    pub(super) fn fill_data_attr(&mut self, attr: &mut Attr, path: &str) -> Result<()> {
        let d = self.data_attr(attr.ino, path)?;
        attr.size = d.size;
        attr.blocks = d.blocks;
        if let Some(m) = d.mtime {
            attr.mtime_unix_ns = m;
            attr.ctime_unix_ns = attr.ctime_unix_ns.max(m);
        }
        Ok(())
    }

    /// Removes file or symbolic link `path`: its record on the metadata
    /// owner, then a file's data from every daemon (for one of several
    /// names: one name less on the file's home daemon, and the data only
    /// with the last). `EISDIR` for a directory.
    pub fn unlink(&mut self, path: &str) -> Result<()> {
        self.check_connected("unlink")?;
        check_path("unlink", path, false)?;
        let owner = self.placement.metadata_owner(path);
        let req = Request::Unlink {
            path,
            ino: 0,
            data: false,
        };
        match self.call_one(owner, &req)? {
            // A symbolic link has no data (the owner reports id 0), a name
            // of several drops its file's count (the data goes with the
            // last).
            Answer::Id { id, linked } if id != 0 && !linked => self.remove_data_stamping(id, path),
            Answer::Id { id, linked } => {
                self.parent_changed(path, false);
                self.settle_removed(id, linked, path)
            }
            a => Err(unexpected("unlink", &a)),
        }
    }

    /// Removes the data of file `ino` from every daemon.
    pub(super) fn remove_data(&mut self, ino: u64, file: &str) -> Result<()> {
        self.fan_out_data(ino, file, |p| Request::Unlink {
            path: p,
            ino: 0,
            data: true,
        })
        .map(drop)
    }

    /// [`Self::remove_data`] of the file `path` named, its parent's stamp
    /// ([`Self::parent_changed`], best effort) sent with it: one round
    /// trip for both.
    fn remove_data_stamping(&mut self, ino: u64, path: &str) -> Result<()> {
        let (parent, _) = split_parent(path);
        let stamp = Request::CheckParent {
            path: parent,
            subdir: false,
            stamp_only: true,
        };
        let stamp = Call::new(
            &self.conn,
            self.placement.metadata_owner(parent),
            &stamp,
            BESIDE_TAG,
        )?;
        self.fan_out_data_beside(
            ino,
            path,
            |p| Request::Unlink {
                path: p,
                ino: 0,
                data: true,
            },
            Some(stamp),
        )
        .map(drop)
    }

    /// Sets the size of file `path` (which must exist) on every daemon.
    pub fn truncate(&mut self, path: &str, size: u64) -> Result<()> {
        self.check_connected("truncate")?;
        check_path("truncate", path, false)?;
        let owner = self.placement.metadata_owner(path);
        let req = Request::Open {
            path,
            flags: libc::O_WRONLY as u32,
        };
        match self.call_one(owner, &req)? {
            Answer::Attr(a) if a.kind == FileKind::File => self.truncate_data(a.ino, size, path),
            Answer::Attr(_) => Err(Error::os(libc::EISDIR, "truncate", path)),
            a => Err(unexpected("truncate", &a)),
        }
    }

    /// Sets the size of the data of file `ino` on every daemon.
    pub(super) fn truncate_data(&mut self, ino: u64, size: u64, file: &str) -> Result<()> {
        self.fan_out_data(ino, file, |p| Request::Truncate { path: p, size })
            .map(drop)
    }

    /// A request about the data object of file `ino` (path `file`) to
    /// every daemon; `ENOENT` (a daemon without any of it) is not an error.
    pub(super) fn fan_out_data(
        &mut self,
        ino: u64,
        file: &str,
        request: impl for<'p> Fn(&'p str) -> Request<'p>,
    ) -> Result<Vec<Outcome>> {
        self.fan_out_data_beside(ino, file, request, None)
    }

    /// [`Self::fan_out_data`], with `beside` (tagged [`BESIDE_TAG`], its
    /// outcome whatever it is left out) sent in the same round.
    fn fan_out_data_beside(
        &mut self,
        ino: u64,
        file: &str,
        request: impl for<'p> Fn(&'p str) -> Request<'p>,
        beside: Option<Call>,
    ) -> Result<Vec<Outcome>> {
        let data = data_name(ino);
        // Errors name the file's path, not its data object.
        let label: Rc<str> = Rc::from(file);
        let n = self.placement.nodes();
        let mut calls = (0..n)
            .map(|node| Call::named(&self.conn, node, &request(&data), u64::from(node), &label))
            .collect::<Result<Vec<_>>>()?;
        calls.extend(beside);
        let tolerated = |o: &Outcome| o.tag == BESIDE_TAG || enoent(o);
        let mut out = self.window.run_all(&self.conn, calls, tolerated)?;
        out.retain(|o| o.tag != BESIDE_TAG);
        for o in &out {
            if let Err(e) = &o.result
                && !enoent(o)
            {
                return Err(e.clone());
            }
        }
        Ok(out)
    }

    /// The entries directly under directory `path` ("" = the root), over
    /// every daemon, sorted by name. `ENOENT`, `ENOTDIR` (a file).
    pub fn readdir(&mut self, path: &str) -> Result<Vec<Entry>> {
        self.check_connected("readdir")?;
        if !path.is_empty() && self.record(path)?.kind != FileKind::Dir {
            return Err(Error::os(libc::ENOTDIR, "readdir", path));
        }
        self.list(path, READDIR_PAGE)
    }

    /// The entries under `path` of every daemon, asking `page` at a time
    /// (a page of 1 and one round: is it empty?).
    pub(super) fn list(&mut self, path: &str, page: u32) -> Result<Vec<Entry>> {
        let mut todo: Vec<(u32, u64)> = (0..self.placement.nodes()).map(|n| (n, 0)).collect();
        let mut merged: BTreeMap<String, Entry> = BTreeMap::new();
        while !todo.is_empty() {
            let calls = todo
                .iter()
                .map(|&(node, cursor)| {
                    let req = Request::Readdir {
                        path,
                        cursor,
                        max_entries: page,
                    };
                    Call::new(&self.conn, node, &req, u64::from(node))
                })
                .collect::<Result<Vec<_>>>()?;
            let out = self.window.run_all(&self.conn, calls, |_| false)?;
            todo.clear();
            for o in out {
                match o.result? {
                    Answer::Dir {
                        entries,
                        next_cursor,
                        eof,
                    } => {
                        let more = !eof && !entries.is_empty() && page > 1;
                        for e in entries {
                            merged.insert(e.name.clone(), e);
                        }
                        if more {
                            todo.push((o.node, next_cursor));
                        }
                    }
                    a => return Err(unexpected("readdir", &a)),
                }
            }
        }
        Ok(merged.into_values().collect())
    }

    pub(super) fn check_node(&self, node: u32, op: &'static str) -> Result<()> {
        self.check_connected(op)?;
        if node >= self.placement.nodes() {
            return Err(Error::invalid(
                "node_id",
                format!("{node} is not in 0..{}", self.placement.nodes()),
            ));
        }
        Ok(())
    }

    /// Round-trip time of a ping to `node`.
    pub fn ping(&mut self, node: u32) -> Result<Duration> {
        self.check_node(node, "ping")?;
        let t = Instant::now();
        self.call_one(
            node,
            &Request::Ping {
                len: 0,
                echo: false,
            },
        )?;
        Ok(t.elapsed())
    }

    /// The daemon's statistics (a JSON object, docs/RPC.md).
    pub fn stats(&mut self, node: u32) -> Result<String> {
        self.check_node(node, "stats")?;
        match self.call_one(node, &Request::Stats)? {
            Answer::Json(s) => Ok(s),
            a => Err(unexpected("stats", &a)),
        }
    }

    /// Asks every daemon to stop (`force`: without draining), then closes
    /// the sessions. The first daemon that did not confirm is the error.
    pub fn shutdown_daemons(&mut self, force: bool) -> Result<()> {
        self.check_connected("shutdown")?;
        let calls = (0..self.placement.nodes())
            .map(|node| Call::new(&self.conn, node, &Request::Shutdown { force }, 0))
            .collect::<Result<Vec<_>>>()?;
        let out = self.window.run_all(&self.conn, calls, |_| true);
        self.window.abandon();
        self.window.flush_trace();
        self.conn.close(Duration::from_millis(500), false);
        self.files.clear();
        for o in out? {
            o.result?;
        }
        Ok(())
    }
}
