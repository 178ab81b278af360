//! What each request does to the chunk store (the semantics of
//! /docs/RPC.md, "Operations"). Runs on the storage pool's threads with the
//! blocking, thread-safe [`ChunkStore`] API; owns nothing of UCX.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::sync::Arc;
use std::time::Instant;

use crate::error::{Error, strerror};
use crate::rpc::wire::{self, Attr, Op};
use crate::storage::{ChunkStore, layout};
use crate::sys;

/// A request's work, owned (it crosses to a pool thread).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Create the file.
    Create {
        /// Permission bits.
        mode: u32,
        /// EEXIST if it exists.
        exclusive: bool,
    },
    /// Look the file up (O_CREAT creates it).
    Open {
        /// Linux `O_*` flags.
        flags: u32,
    },
    /// Attributes.
    Stat,
    /// Write the job's buffer at `chunk`/`offset`.
    Write {
        /// Chunk index.
        chunk: u64,
        /// Offset inside the chunk.
        offset: u64,
        /// Durable before the reply.
        sync: bool,
    },
    /// Read into the job's buffer.
    Read {
        /// Chunk index.
        chunk: u64,
        /// Offset inside the chunk.
        offset: u64,
        /// Bytes wanted.
        len: u64,
    },
    /// Make the file durable.
    Fsync,
    /// Set the size (creating the file when absent).
    Truncate {
        /// New size.
        size: u64,
    },
    /// Remove the file.
    Unlink,
    /// A ping's payload, received in full, then sent back as it came when
    /// `back` (never reaches the store).
    Echo {
        /// Send the payload back.
        back: bool,
    },
    /// Directory entries from `cursor`, encoded into the job's buffer.
    Readdir {
        /// Index in the sorted entry list.
        cursor: u64,
        /// Most entries.
        max_entries: u32,
    },
}

impl Work {
    /// The wire op.
    pub fn op(&self) -> Op {
        match self {
            Work::Create { .. } => Op::Create,
            Work::Open { .. } => Op::Open,
            Work::Stat => Op::Stat,
            Work::Write { .. } => Op::Write,
            Work::Read { .. } => Op::Read,
            Work::Fsync => Op::Fsync,
            Work::Truncate { .. } => Op::Truncate,
            Work::Unlink => Op::Unlink,
            Work::Readdir { .. } => Op::Readdir,
            Work::Echo { .. } => Op::Ping,
        }
    }
}

/// One request for a pool thread.
#[derive(Debug)]
pub struct Job {
    /// The event loop's handle of the request.
    pub token: u32,
    /// The logical path ("" for the readdir root).
    pub path: String,
    /// What to do.
    pub work: Work,
    /// Write: the data. Read and readdir: filled with the reply payload.
    pub buf: Vec<u8>,
}

/// A successful result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    /// Create, open, stat.
    Attr(Attr),
    /// Write.
    Written(u64),
    /// Read: the data is in the buffer.
    Data,
    /// Ping with a payload, in the buffer; `back`: send it back.
    Echo {
        /// Send the payload back.
        back: bool,
    },
    /// Fsync, truncate, unlink.
    Unit,
    /// Readdir: `count` entries encoded in the buffer.
    Dir {
        /// Entries.
        count: u32,
        /// Cursor of the next call.
        next_cursor: u64,
        /// No entries after these.
        eof: bool,
    },
}

/// A failed result: the errno and the error reply's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Positive errno.
    pub errno: i32,
    /// E.g. `read testfile.3 chunk 7: No such file or directory`.
    pub message: String,
}

/// The result of a [`Job`], back to the event loop.
#[derive(Debug)]
pub struct Outcome {
    /// The job's token.
    pub token: u32,
    /// What happened.
    pub result: Result<Done, Failure>,
    /// The job's buffer (read data or readdir entries on success).
    pub buf: Vec<u8>,
    /// Time spent in the store.
    pub storage_ns: u64,
}

/// The errno an engine error stands for.
pub fn errno_of(e: &Error) -> i32 {
    match e {
        Error::Os { errno, .. } | Error::Rpc { errno, .. } => *errno,
        Error::InvalidArgument { .. } | Error::InvalidPath { .. } => libc::EINVAL,
        Error::Closed => libc::ESHUTDOWN,
        Error::Forked { .. } => libc::EIO,
    }
}

/// Executes jobs against one store.
#[derive(Debug)]
pub struct Storage {
    store: Arc<ChunkStore>,
    chunk_size: u64,
    fsync_each_write: bool,
}

fn what(work: &Work, path: &str) -> String {
    match *work {
        Work::Write { chunk, .. } | Work::Read { chunk, .. } => {
            format!("{} {path} chunk {chunk}", work.op())
        }
        Work::Readdir { .. } if path.is_empty() => "readdir /".to_owned(),
        _ => format!("{} {path}", work.op()),
    }
}

fn fail(work: &Work, path: &str, errno: i32, detail: &str) -> Failure {
    let message = if detail.is_empty() {
        format!("{}: {}", what(work, path), strerror(errno))
    } else {
        format!("{}: {} ({detail})", what(work, path), strerror(errno))
    };
    Failure { errno, message }
}

fn engine_fail(work: &Work, path: &str, e: &Error) -> Failure {
    let errno = errno_of(e);
    match e {
        Error::Os { .. } => fail(work, path, errno, link_detail(errno)),
        other => fail(work, path, errno, &other.to_string()),
    }
}

fn io_fail(work: &Work, path: &str, e: &io::Error) -> Failure {
    let errno = e.raw_os_error().unwrap_or(libc::EIO);
    fail(work, path, errno, link_detail(errno))
}

/// The words for a file refused because it is a symbolic link (or would
/// resolve outside the data directory).
fn link_detail(errno: i32) -> &'static str {
    if sys::is_link_refusal(errno) {
        "a symbolic link in the data directory is never followed"
    } else {
        ""
    }
}

/// The permission bits a caller may give a file: never set-user-ID,
/// set-group-ID or sticky (a daemon running as root would otherwise create
/// a setuid file for anyone who can reach it).
pub fn permission_bits(mode: u32) -> u32 {
    mode & 0o777
}

/// Nanoseconds since the Unix epoch of a `(seconds, nanoseconds)` time.
fn unix_ns(secs: i64, nsec: i64) -> u64 {
    u64::try_from(secs)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(nsec).unwrap_or(0))
}

fn attr_of(m: &fs::Metadata) -> Attr {
    Attr {
        ino: 0,
        kind: wire::FileKind::of_mode(m.mode()),
        size: m.len(),
        blocks: m.blocks(),
        mode: m.mode(),
        uid: m.uid(),
        gid: m.gid(),
        nlink: 1,
        atime_unix_ns: unix_ns(m.atime(), m.atime_nsec()),
        mtime_unix_ns: unix_ns(m.mtime(), m.mtime_nsec()),
        ctime_unix_ns: unix_ns(m.ctime(), m.ctime_nsec()),
    }
}

impl Storage {
    /// Jobs on `store`; every write is made durable when `fsync_each_write`.
    pub fn new(store: Arc<ChunkStore>, fsync_each_write: bool) -> Storage {
        let chunk_size = store.chunk_size();
        Storage {
            store,
            chunk_size,
            fsync_each_write,
        }
    }

    /// Runs `job`, timing the store work.
    pub fn execute(&self, mut job: Job) -> Outcome {
        let start = Instant::now();
        let result = self.run(&job.path, &job.work, &mut job.buf);
        let storage_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        Outcome {
            token: job.token,
            result,
            buf: job.buf,
            storage_ns,
        }
    }

    /// Opens the backing file of `path` relative to the store's directory,
    /// never through a symbolic link, and returns its attributes.
    fn open_attr(&self, work: &Work, path: &str, flags: i32, mode: u32) -> Result<Attr, Failure> {
        let name = layout::backing_name(path).map_err(|e| engine_fail(work, path, &e))?;
        let name = CString::new(name).map_err(|_| fail(work, path, libc::EINVAL, ""))?;
        let fd = sys::open_beneath(self.store.root_fd(), &name, flags, mode)
            .map_err(|e| io_fail(work, path, &e))?;
        fs::File::from(fd)
            .metadata()
            .map(|m| attr_of(&m))
            .map_err(|e| io_fail(work, path, &e))
    }

    fn attr(&self, work: &Work, path: &str) -> Result<Attr, Failure> {
        // O_NONBLOCK: a FIFO planted in the directory must not block a thread.
        self.open_attr(work, path, libc::O_RDONLY | libc::O_NONBLOCK, 0)
    }

    fn create(&self, work: &Work, path: &str, mode: u32, exclusive: bool) -> Result<Attr, Failure> {
        let mut flags = libc::O_WRONLY | libc::O_CREAT | libc::O_NONBLOCK;
        if exclusive {
            flags |= libc::O_EXCL;
        }
        self.open_attr(work, path, flags, permission_bits(mode))
    }

    /// `offset + len` inside one chunk, as a file offset.
    fn file_offset(
        &self,
        work: &Work,
        path: &str,
        chunk: u64,
        offset: u64,
        len: u64,
    ) -> Result<u64, Failure> {
        let inside = offset
            .checked_add(len)
            .is_some_and(|end| end <= self.chunk_size);
        if !inside {
            return Err(fail(
                work,
                path,
                libc::EINVAL,
                &format!(
                    "offset {offset} + length {len} exceeds the chunk size {}",
                    self.chunk_size
                ),
            ));
        }
        chunk
            .checked_mul(self.chunk_size)
            .and_then(|b| b.checked_add(offset))
            .ok_or_else(|| fail(work, path, libc::EINVAL, "file offset overflows"))
    }

    fn run(&self, path: &str, work: &Work, buf: &mut Vec<u8>) -> Result<Done, Failure> {
        let store = &*self.store;
        let ef = |e: Error| engine_fail(work, path, &e);
        match *work {
            Work::Create { mode, exclusive } => {
                self.create(work, path, mode, exclusive).map(Done::Attr)
            }
            Work::Open { flags } => {
                let flags = flags as i32;
                if flags & libc::O_CREAT != 0 {
                    let exclusive = flags & libc::O_EXCL != 0;
                    self.create(work, path, 0o644, exclusive).map(Done::Attr)
                } else {
                    self.attr(work, path).map(Done::Attr)
                }
            }
            Work::Stat => self.attr(work, path).map(Done::Attr),
            Work::Write {
                chunk,
                offset,
                sync,
            } => {
                let at = self.file_offset(work, path, chunk, offset, buf.len() as u64)?;
                let n = store.write(path, at, buf).map_err(ef)?;
                if sync || self.fsync_each_write {
                    store.fsync(path).map_err(ef)?;
                }
                Ok(Done::Written(n as u64))
            }
            Work::Read { chunk, offset, len } => {
                let at = self.file_offset(work, path, chunk, offset, len)?;
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                store.read_into(path, at, len, buf).map_err(ef)?;
                Ok(Done::Data)
            }
            Work::Fsync => store.fsync(path).map(|()| Done::Unit).map_err(ef),
            Work::Truncate { size } => match store.truncate(path, size) {
                Err(e) if errno_of(&e) == libc::ENOENT => {
                    store.write(path, 0, &[]).map_err(ef)?;
                    store.truncate(path, size).map(|()| Done::Unit).map_err(ef)
                }
                r => r.map(|()| Done::Unit).map_err(ef),
            },
            Work::Unlink => store.remove(path).map(|()| Done::Unit).map_err(ef),
            Work::Echo { back } => Ok(Done::Echo { back }),
            Work::Readdir {
                cursor,
                max_entries,
            } => self.readdir(work, path, cursor, max_entries, buf),
        }
    }

    fn readdir(
        &self,
        work: &Work,
        dir: &str,
        cursor: u64,
        max_entries: u32,
        buf: &mut Vec<u8>,
    ) -> Result<Done, Failure> {
        buf.clear();
        let files = self.store.list().map_err(|e| engine_fail(work, dir, &e))?;
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        // name -> Some(logical path) for a file, None for a directory.
        let mut names: BTreeMap<&str, Option<&str>> = BTreeMap::new();
        for f in &files {
            let Some(rest) = f.strip_prefix(prefix.as_str()) else {
                continue;
            };
            match rest.split_once('/') {
                Some((name, _)) => {
                    names.insert(name, None);
                }
                None => {
                    names.entry(rest).or_insert(Some(f.as_str()));
                }
            }
        }
        let total = names.len() as u64;
        let start = usize::try_from(cursor).unwrap_or(usize::MAX);
        let mut entries = Vec::with_capacity(names.len().min(max_entries as usize));
        for (name, file) in names.into_iter().skip(start).take(max_entries as usize) {
            let (mode, size) = match file {
                None => (libc::S_IFDIR | 0o755, 0),
                Some(f) => match self.attr(work, f) {
                    Ok(a) => (a.mode, a.size),
                    // Removed since the listing: leave it out.
                    Err(_) => continue,
                },
            };
            entries.push(wire::DirEntry { name, mode, size });
        }
        let consumed = (start as u64)
            .saturating_add(u64::from(max_entries))
            .min(total);
        wire::encode_dir_entries(buf, &entries).map_err(|e| engine_fail(work, dir, &e))?;
        Ok(Done::Dir {
            count: entries.len() as u32,
            next_cursor: consumed.max(cursor),
            eof: consumed >= total,
        })
    }
}
