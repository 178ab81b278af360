//! Reads and writes, split at chunk borders, each piece to its chunk's
//! owner; fsync and close, of a handle or of a detached file.

use std::rc::Rc;

use super::{MAX_IO, data_name, enoent, unexpected};
use crate::error::{Error, Result};
use crate::rpc::client::buf::SharedBuf;
use crate::rpc::client::inflight::{Answer, Call};
use crate::rpc::client::split::{split, written_from_start};
use crate::rpc::client::{Client, FileRef, OpenFile};
use crate::rpc::wire::Request;

/// Largest read buffer a client keeps for its next read (a larger one is
/// made for its read and dropped after it).
const KEPT_READ_BUF: usize = 4 << 20;

impl Client {
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
        // The home hears of the data in the same round: a stat after this
        // write returns asks the data daemons.
        let mark = if len == 0 {
            None
        } else {
            self.data_mark(f.ino, &f.path)?
        };
        let marking = mark.is_some();
        let mut calls: Vec<Call> = mark.into_iter().collect();
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
        if marking {
            self.data_marked(f.ino);
        }
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
}
