//! What each request does to the chunk store (the semantics of
//! /docs/RPC.md, "Operations"). Runs on the storage pool's threads with the
//! blocking, thread-safe [`ChunkStore`] API; owns nothing of UCX.

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::error::{Error, strerror};
use crate::namespace::{IdSource, Namespace, Removed};
use crate::rpc::wire::{self, Attr, Op};
use crate::storage::buffer::FixedBuf;
use crate::storage::{ChunkStore, layout};
use crate::sys;

/// A request's work, owned (it crosses to a pool thread).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Create the file record.
    Create {
        /// Permission bits.
        mode: u32,
        /// Owner.
        uid: u32,
        /// Group.
        gid: u32,
        /// EEXIST if it exists.
        exclusive: bool,
        /// Check the parent here, with the insert.
        parent_here: bool,
    },
    /// Look the record up.
    Open {
        /// Linux `O_*` flags.
        flags: u32,
    },
    /// Attributes of the record, or of the data object when `data`.
    Stat {
        /// The path names a data object.
        data: bool,
    },
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
    /// Remove the file record (if its id is `ino`, unless 0), or the data
    /// object when `data`.
    Unlink {
        /// Expected id; 0: any.
        ino: u64,
        /// The path names a data object.
        data: bool,
    },
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
    /// Create the directory record.
    Mkdir {
        /// Permission bits.
        mode: u32,
        /// Owner.
        uid: u32,
        /// Group.
        gid: u32,
        /// Check the parent here, with the insert.
        parent_here: bool,
    },
    /// One step of a directory removal.
    Rmdir {
        /// The step.
        step: wire::RmdirStep,
        /// Undo: the directory's id.
        ino: u64,
    },
    /// Whether the path takes new entries.
    CheckParent,
    /// Insert a file or symbolic link record (rename); a link's target is
    /// the job's buffer.
    Link {
        /// The record.
        record: wire::Record,
        /// Check the parent here, with the insert.
        parent_here: bool,
        /// `EEXIST` if the name exists (a hard link's new name).
        exclusive: bool,
        /// One of several names of its file.
        linked: bool,
    },
    /// A step on a link count of an id handed out here, or the mark of a
    /// record as one of several names.
    LinkCount {
        /// The file's id.
        ino: u64,
        /// The step.
        step: wire::CountStep,
        /// A set's `SET_*` bits.
        mask: u32,
        /// An add's or a set's attributes.
        attr: wire::SharedAttr,
    },
    /// Change attributes (of the record, or the data object's times).
    Setattr(SetFields),
    /// The daemon's totals.
    Statfs,
    /// Create a symbolic link record; its target is the job's buffer.
    Symlink {
        /// Owner.
        uid: u32,
        /// Group.
        gid: u32,
        /// Check the parent here, with the insert.
        parent_here: bool,
    },
    /// A symbolic link's record; its target goes into the job's buffer.
    Readlink,
}

/// The fields of a setattr request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetFields {
    /// `SET_*` bits.
    pub mask: u32,
    /// Permission bits.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Size.
    pub size: u64,
    /// Access time.
    pub atime: u64,
    /// Modification time.
    pub mtime: u64,
    /// The path names a data object.
    pub data: bool,
}

impl Work {
    /// The wire op.
    pub fn op(&self) -> Op {
        match self {
            Work::Create { .. } => Op::Create,
            Work::Open { .. } => Op::Open,
            Work::Stat { .. } => Op::Stat,
            Work::Write { .. } => Op::Write,
            Work::Read { .. } => Op::Read,
            Work::Fsync => Op::Fsync,
            Work::Truncate { .. } => Op::Truncate,
            Work::Unlink { .. } => Op::Unlink,
            Work::Readdir { .. } => Op::Readdir,
            Work::Mkdir { .. } => Op::Mkdir,
            Work::Rmdir { .. } => Op::Rmdir,
            Work::CheckParent => Op::CheckParent,
            Work::Link { .. } => Op::Link,
            Work::Setattr(_) => Op::Setattr,
            Work::Statfs => Op::Statfs,
            Work::Symlink { .. } => Op::Symlink,
            Work::Readlink => Op::Readlink,
            Work::LinkCount { .. } => Op::LinkCount,
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
    /// Write: the data; symlink, link: a link's target. Read, readdir and
    /// readlink: filled with the reply payload.
    pub buf: Vec<u8>,
    /// A write's data received straight into one of the store's registered
    /// buffers (then `buf` is an idle pool vector); only the ring takes it.
    pub fixed: Option<FixedBuf>,
}

impl Job {
    /// Moves data received into a registered buffer into `buf`, for a
    /// write that goes to the pool after all.
    pub fn unfix(&mut self) {
        if let Some(f) = self.fixed.take() {
            self.buf.clear();
            self.buf.extend_from_slice(f.as_slice());
        }
    }
}

/// A successful result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    /// Create, open, stat, mkdir, setattr, symlink.
    Attr(Attr),
    /// Readlink: the link's attributes; its target is in the buffer.
    Link(Attr),
    /// Create: the record, and whether this request made it.
    Created(Attr, bool),
    /// Unlink (what was removed), link (what was replaced).
    Removed(Removed),
    /// A link count after a step (a mark: 0), and the shared attributes
    /// when this daemon keeps them.
    Count(u64, Option<wire::SharedAttr>),
    /// Statfs.
    Statfs(wire::StatFsReply),
    /// Write.
    Written(u64),
    /// Read: the data is in the buffer.
    Data,
    /// Ping with a payload, in the buffer; `back`: send it back.
    Echo {
        /// Send the payload back.
        back: bool,
    },
    /// Fsync, truncate, rmdir, check_parent.
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
    /// A read's data in one of the store's registered buffers (then `buf`
    /// is an idle pool vector), sent from there.
    pub fixed: Option<FixedBuf>,
    /// Time spent in the store.
    pub storage_ns: u64,
}

/// The errno an engine error stands for.
pub fn errno_of(e: &Error) -> i32 {
    e.posix_errno()
}

/// Executes jobs against one store.
#[derive(Debug)]
pub struct Storage {
    pub(super) store: Arc<ChunkStore>,
    chunk_size: u64,
    pub(super) fsync_each_write: bool,
    pub(super) names: Mutex<Namespace>,
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

pub(super) fn fail(work: &Work, path: &str, errno: i32, detail: &str) -> Failure {
    let message = if detail.is_empty() {
        format!("{}: {}", what(work, path), strerror(errno))
    } else {
        format!("{}: {} ({detail})", what(work, path), strerror(errno))
    };
    Failure { errno, message }
}

pub(super) fn engine_fail(work: &Work, path: &str, e: &Error) -> Failure {
    let errno = errno_of(e);
    match e {
        Error::Os { .. } => fail(work, path, errno, link_detail(errno)),
        other => fail(work, path, errno, &other.to_string()),
    }
}

pub(super) fn io_fail(work: &Work, path: &str, e: &io::Error) -> Failure {
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

/// Nanoseconds since the Unix epoch of a `(seconds, nanoseconds)` time.
pub(super) fn unix_ns(secs: i64, nsec: i64) -> u64 {
    u64::try_from(secs)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(nsec).unwrap_or(0))
}

pub(super) fn attr_of(m: &fs::Metadata) -> Attr {
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
    /// Jobs on `store` of daemon `node_id`, with an empty namespace; every
    /// write is made durable when `fsync_each_write`.
    pub fn new(store: Arc<ChunkStore>, fsync_each_write: bool, node_id: u32) -> Storage {
        let chunk_size = store.chunk_size();
        // A failing random source only makes a restarted daemon's ids
        // likelier to repeat an earlier run's.
        let seed = sys::random_u64().unwrap_or_else(|_| super::requests::unix_now_ns());
        let ids = IdSource::new(node_id, seed);
        let names = Namespace::new(
            ids,
            super::requests::unix_now_ns(),
            sys::effective_uid(),
            sys::effective_gid(),
        );
        Storage {
            store,
            chunk_size,
            fsync_each_write,
            names: Mutex::new(names),
        }
    }

    /// Namespace records held (the root not counted).
    pub fn namespace_records(&self) -> usize {
        self.names
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Entries of the link table (docs/NAMESPACE.md, "Hard links").
    pub fn link_table_entries(&self) -> usize {
        self.names
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .link_table_len()
    }

    /// Runs `job`, timing the store work.
    pub fn execute(&self, mut job: Job) -> Outcome {
        job.unfix();
        let start = Instant::now();
        let result = self.run(&job.path, &job.work, &mut job.buf);
        let storage_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        Outcome {
            token: job.token,
            result,
            buf: job.buf,
            fixed: None,
            storage_ns,
        }
    }

    /// Opens the backing file of data object `path` relative to the
    /// store's directory, never through a symbolic link (O_NONBLOCK: a
    /// FIFO planted in the directory must not block a thread).
    pub(super) fn open_data(&self, work: &Work, path: &str) -> Result<fs::File, Failure> {
        let name = layout::backing_name(path).map_err(|e| engine_fail(work, path, &e))?;
        let name = CString::new(name).map_err(|_| fail(work, path, libc::EINVAL, ""))?;
        let fd = sys::open_beneath(
            self.store.root_fd(),
            &name,
            libc::O_RDONLY | libc::O_NONBLOCK,
            0,
        )
        .map_err(|e| io_fail(work, path, &e))?;
        Ok(fs::File::from(fd))
    }

    /// Attributes of the backing file of data object `path`.
    fn data_attr(&self, work: &Work, path: &str) -> Result<Attr, Failure> {
        self.open_data(work, path)?
            .metadata()
            .map(|m| attr_of(&m))
            .map_err(|e| io_fail(work, path, &e))
    }

    /// `offset + len` inside one chunk, as a file offset.
    pub(super) fn file_offset(
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
            Work::Stat { data: true } => self.data_attr(work, path).map(Done::Attr),
            Work::Unlink { data: true, .. } => store
                .remove(path)
                .map(|()| Done::Removed(Removed::default()))
                .map_err(ef),
            Work::Setattr(f) if f.data => self.data_times(work, path, &f),
            Work::Create { .. }
            | Work::Open { .. }
            | Work::Stat { .. }
            | Work::Unlink { .. }
            | Work::Readdir { .. }
            | Work::Mkdir { .. }
            | Work::Rmdir { .. }
            | Work::CheckParent
            | Work::Link { .. }
            | Work::Setattr(_)
            | Work::Statfs
            | Work::Symlink { .. }
            | Work::Readlink
            | Work::LinkCount { .. } => self.run_names(work, path, buf),
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
            Work::Echo { back } => Ok(Done::Echo { back }),
        }
    }
}
