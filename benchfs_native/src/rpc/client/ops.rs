//! The POSIX-like operations and where they go (the client part of the
//! contract): create and open to the metadata owner; writes and reads split
//! at chunk borders, each piece to its chunk's owner, up to
//! `max_in_flight` at once; stat, fsync, truncate and unlink to every
//! daemon (`ENOENT` of daemons that hold nothing of the file ignored);
//! readdir the union over every daemon.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::buf::SharedBuf;
use super::inflight::{Answer, Call, Entry, Outcome};
use super::split::split;
use super::{Client, OpenFile};
use crate::error::{Error, Result};
use crate::rpc::wire::{Attr, Request};

/// Entries asked for per readdir page.
const READDIR_PAGE: u32 = 4096;
/// Largest single read or write (the wire's payload limit).
pub const MAX_IO: usize = 1 << 30;

fn enoent(o: &Outcome) -> bool {
    o.errno() == Some(libc::ENOENT)
}

fn unexpected(what: &str, a: &Answer) -> Error {
    Error::os(
        libc::EBADMSG,
        "rpc",
        format!("{what}: unexpected answer {a:?}"),
    )
}

impl Client {
    fn check_connected(&self, op: &'static str) -> Result<()> {
        if self.conn.is_closed() {
            return Err(Error::os(libc::ENOTCONN, op, "the client is disconnected"));
        }
        Ok(())
    }

    fn file(&self, handle: u64, op: &'static str) -> Result<OpenFile> {
        self.files
            .get(&handle)
            .cloned()
            .ok_or_else(|| Error::os(libc::EBADF, op, format!("handle {handle}")))
    }

    /// One call, its answer.
    fn call_one(&mut self, node: u32, request: &Request<'_>) -> Result<Answer> {
        let call = Call::new(&self.conn, node, request, 0)?;
        let mut out = self.window.run_all(&self.conn, vec![call], |_| false)?;
        match out.pop() {
            Some(o) => o.result,
            None => Err(Error::os(libc::EIO, "rpc", "no outcome")),
        }
    }

    fn new_handle(&mut self, path: &str, flags: i32) -> u64 {
        let h = self.next_handle;
        self.next_handle += 1;
        self.files.insert(
            h,
            OpenFile {
                path: Rc::from(path),
                flags,
            },
        );
        h
    }

    /// Creates `path` (empty) on its metadata owner and opens it for
    /// reading and writing; `EEXIST` if it exists and `exclusive`.
    pub fn create(&mut self, path: &str, mode: u32, exclusive: bool) -> Result<u64> {
        self.check_connected("create")?;
        let owner = self.placement.metadata_owner(path);
        let a = self.call_one(
            owner,
            &Request::Create {
                path,
                mode,
                exclusive,
            },
        )?;
        if !matches!(a, Answer::Attr(_)) {
            return Err(unexpected("create", &a));
        }
        Ok(self.new_handle(path, libc::O_RDWR | libc::O_CREAT))
    }

    /// Opens `path` with `open(2)` flags: `O_CREAT` creates it (with `mode`;
    /// with `O_EXCL`, `EEXIST` if it exists), `O_TRUNC` empties it.
    pub fn open(&mut self, path: &str, flags: i32, mode: u32) -> Result<u64> {
        self.check_connected("open")?;
        let owner = self.placement.metadata_owner(path);
        let excl = flags & libc::O_CREAT != 0 && flags & libc::O_EXCL != 0;
        let request = if excl {
            Request::Create {
                path,
                mode,
                exclusive: true,
            }
        } else {
            Request::Open {
                path,
                flags: flags as u32,
            }
        };
        let a = self.call_one(owner, &request)?;
        if !matches!(a, Answer::Attr(_)) {
            return Err(unexpected("open", &a));
        }
        let writable = flags & libc::O_ACCMODE != libc::O_RDONLY;
        if flags & libc::O_TRUNC != 0 && writable {
            self.truncate_all(path, 0)?;
        }
        Ok(self.new_handle(path, flags))
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
    pub fn write_buf(&mut self, handle: u64, offset: u64, mut buf: SharedBuf) -> Result<u64> {
        self.check_connected("write")?;
        let f = self.file(handle, "write")?;
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
        let start = self.placement.start_node(&f.path);
        let mut calls = Vec::new();
        for (i, p) in split(offset, len, self.conn.chunk_size).enumerate() {
            let node = self.placement.chunk_owner_from(start, p.chunk);
            let req = Request::Write {
                path: &f.path,
                chunk: p.chunk,
                offset: p.chunk_offset,
                len: p.len as u64,
                sync,
            };
            let piece = buf.piece(p.buf_offset, p.len);
            calls.push(Call::new(&self.conn, node, &req, i as u64)?.with_payload(piece));
        }
        let out = self.window.run_all(&self.conn, calls, |_| false)?;
        let mut written = 0u64;
        for o in out {
            match o.result? {
                Answer::Written(n) => written += n,
                a => return Err(unexpected("write", &a)),
            }
        }
        Ok(written)
    }

    /// Reads up to `len` bytes at `offset` of the open file; shorter at its
    /// end, holes read as zeros.
    pub fn read(&mut self, handle: u64, offset: u64, len: usize) -> Result<Vec<u8>> {
        self.check_connected("read")?;
        let f = self.file(handle, "read")?;
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
        let mut buf = SharedBuf::zeroed(len);
        let start = self.placement.start_node(&f.path);
        let pieces: Vec<_> = split(offset, len, self.conn.chunk_size).collect();
        let mut calls = Vec::with_capacity(pieces.len());
        for (i, p) in pieces.iter().enumerate() {
            let node = self.placement.chunk_owner_from(start, p.chunk);
            let req = Request::Read {
                path: &f.path,
                chunk: p.chunk,
                offset: p.chunk_offset,
                len: p.len as u64,
            };
            let piece = buf.piece(p.buf_offset, p.len);
            calls.push(Call::new(&self.conn, node, &req, i as u64)?.with_dest(piece));
        }
        // A daemon without a backing file holds only holes of this range.
        let out = self.window.run_all(&self.conn, calls, enoent)?;
        let mut short = false;
        for o in &out {
            let want = pieces.get(o.tag as usize).map_or(0, |p| p.len as u64);
            match &o.result {
                Ok(Answer::Read(n)) => short |= *n < want,
                Ok(a) => return Err(unexpected("read", a)),
                Err(_) => short = true,
            }
        }
        let mut data = buf.to_vec().ok_or_else(|| {
            Error::os(
                libc::EIO,
                "read",
                format!("{}: buffer still in use", f.path),
            )
        })?;
        if short {
            let size = self.stat(&f.path)?.size;
            let end = size.min(offset + len as u64);
            data.truncate(end.saturating_sub(offset) as usize);
        }
        Ok(data)
    }

    /// Makes the open file durable on every daemon.
    pub fn fsync(&mut self, handle: u64) -> Result<()> {
        self.check_connected("fsync")?;
        let f = self.file(handle, "fsync")?;
        let owner = self.placement.metadata_owner(&f.path);
        self.fan_out_path(owner, &f.path, |p| Request::Fsync {
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

    /// Attributes of `path`: the size is the largest of the daemons'
    /// backing files.
    pub fn stat(&mut self, path: &str) -> Result<Attr> {
        self.check_connected("stat")?;
        let owner = self.placement.metadata_owner(path);
        let out = self.fan_out_path(owner, path, |p| Request::Stat { path: p })?;
        let mut attr = Attr::default();
        for o in out {
            if let Ok(Answer::Attr(a)) = o.result {
                attr.size = attr.size.max(a.size);
                attr.mtime_unix_ns = attr.mtime_unix_ns.max(a.mtime_unix_ns);
                if o.node == owner || attr.mode == 0 {
                    attr.mode = a.mode;
                }
            }
        }
        Ok(attr)
    }

    /// Removes `path` from every daemon.
    pub fn unlink(&mut self, path: &str) -> Result<()> {
        self.check_connected("unlink")?;
        let owner = self.placement.metadata_owner(path);
        self.fan_out_path(owner, path, |p| Request::Unlink { path: p })
            .map(drop)
    }

    /// Sets the size of `path` (which must exist) on every daemon.
    pub fn truncate(&mut self, path: &str, size: u64) -> Result<()> {
        self.check_connected("truncate")?;
        let owner = self.placement.metadata_owner(path);
        self.call_one(owner, &Request::Open { path, flags: 0 })?;
        self.truncate_all(path, size)
    }

    fn truncate_all(&mut self, path: &str, size: u64) -> Result<()> {
        let owner = self.placement.metadata_owner(path);
        self.fan_out_path(owner, path, |p| Request::Truncate { path: p, size })
            .map(drop)
    }

    /// [`Client::fan_out`] of a request about `path`.
    fn fan_out_path(
        &mut self,
        owner: u32,
        path: &str,
        request: impl for<'p> Fn(&'p str) -> Request<'p>,
    ) -> Result<Vec<Outcome>> {
        let n = self.placement.nodes();
        let calls = (0..n)
            .map(|node| Call::new(&self.conn, node, &request(path), u64::from(node)))
            .collect::<Result<Vec<_>>>()?;
        let mut out = self.window.run_all(&self.conn, calls, enoent)?;
        if let Some(i) = out.iter().position(|o| o.node == owner && enoent(o)) {
            return Err(out.swap_remove(i).result.err().unwrap_or(Error::Closed));
        }
        Ok(out)
    }

    /// The entries directly under `path` ("" = the root), over every
    /// daemon, sorted by name.
    pub fn readdir(&mut self, path: &str) -> Result<Vec<Entry>> {
        self.check_connected("readdir")?;
        let mut todo: Vec<(u32, u64)> = (0..self.placement.nodes()).map(|n| (n, 0)).collect();
        let mut merged: BTreeMap<String, Entry> = BTreeMap::new();
        let mut missing = 0u32;
        let mut first_missing: Option<Error> = None;
        while !todo.is_empty() {
            let calls = todo
                .iter()
                .map(|&(node, cursor)| {
                    let req = Request::Readdir {
                        path,
                        cursor,
                        max_entries: READDIR_PAGE,
                    };
                    Call::new(&self.conn, node, &req, u64::from(node))
                })
                .collect::<Result<Vec<_>>>()?;
            let out = self.window.run_all(&self.conn, calls, enoent)?;
            todo.clear();
            for o in out {
                match o.result {
                    Ok(Answer::Dir {
                        entries,
                        next_cursor,
                        eof,
                    }) => {
                        let more = !eof && !entries.is_empty();
                        for e in entries {
                            merged
                                .entry(e.name.clone())
                                .and_modify(|m| m.size = m.size.max(e.size))
                                .or_insert(e);
                        }
                        if more {
                            todo.push((o.node, next_cursor));
                        }
                    }
                    Ok(a) => return Err(unexpected("readdir", &a)),
                    Err(e) => {
                        missing += 1;
                        first_missing.get_or_insert(e);
                    }
                }
            }
        }
        if !path.is_empty()
            && missing == self.placement.nodes()
            && let Some(e) = first_missing
        {
            return Err(e);
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
