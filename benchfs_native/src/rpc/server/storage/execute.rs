//! What each request does to the chunk store (the semantics of
//! /docs/RPC.md, "Operations"): the decoded request itself, its path
//! owned ([`OwnedRequest`]), is what a storage thread is handed, and its
//! answer is the reply to send. Runs on the storage pool's threads with
//! the blocking, thread-safe [`ChunkStore`] API; owns nothing of UCX.

use std::ffi::CString;
use std::fs;
use std::os::unix::fs::MetadataExt as _;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::job::{Failure, Job, Outcome, engine_fail, errno_of, fail, io_fail};
use crate::error::Error;
use crate::namespace::{IdSource, Namespace};
use crate::rpc::server::clock::unix_now_ns;
use crate::rpc::wire::{self, Attr, OwnedRequest, Reply, RequestOf};
use crate::storage::{ChunkStore, layout};
use crate::sys;

/// Executes jobs against one store.
#[derive(Debug)]
pub struct Storage {
    pub(super) store: Arc<ChunkStore>,
    chunk_size: u64,
    pub(super) fsync_each_write: bool,
    pub(super) names: Mutex<Namespace>,
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
        let seed = sys::random_u64().unwrap_or_else(|_| unix_now_ns());
        let ids = IdSource::new(node_id, seed);
        let names = Namespace::new(
            ids,
            unix_now_ns(),
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
        let result = self.run(&job.request, &mut job.buf);
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
    pub(super) fn open_data(&self, request: &OwnedRequest) -> Result<fs::File, Failure> {
        let name = layout::backing_name(request.path()).map_err(|e| engine_fail(request, &e))?;
        let name = CString::new(name).map_err(|_| fail(request, libc::EINVAL, ""))?;
        let fd = sys::open_beneath(
            self.store.root_fd(),
            &name,
            libc::O_RDONLY | libc::O_NONBLOCK,
            0,
        )
        .map_err(|e| io_fail(request, &e))?;
        Ok(fs::File::from(fd))
    }

    /// Attributes of the backing file of data object `path`.
    fn data_attr(&self, request: &OwnedRequest) -> Result<Attr, Failure> {
        self.open_data(request)?
            .metadata()
            .map(|m| attr_of(&m))
            .map_err(|e| io_fail(request, &e))
    }

    /// `offset + len` inside one chunk, as a file offset.
    pub(super) fn file_offset(
        &self,
        request: &OwnedRequest,
        chunk: u64,
        offset: u64,
        len: u64,
    ) -> Result<u64, Failure> {
        let inside = offset
            .checked_add(len)
            .is_some_and(|end| end <= self.chunk_size);
        if !inside {
            return Err(fail(
                request,
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
            .ok_or_else(|| fail(request, libc::EINVAL, "file offset overflows"))
    }

    fn run(&self, request: &OwnedRequest, buf: &mut Vec<u8>) -> Result<Reply<'static>, Failure> {
        let store = &*self.store;
        let path = request.path();
        let ef = |e: Error| engine_fail(request, &e);
        match *request {
            RequestOf::Stat { data: true, .. } => self.data_attr(request).map(Reply::Stat),
            RequestOf::Unlink { data: true, .. } => store
                .remove(path)
                .map(|()| Reply::Unlink {
                    ino: 0,
                    linked: false,
                })
                .map_err(ef),
            RequestOf::Setattr {
                data: true,
                mask,
                atime_unix_ns,
                mtime_unix_ns,
                ..
            } => self.data_times(request, mask, atime_unix_ns, mtime_unix_ns),
            RequestOf::Write {
                chunk,
                offset,
                sync,
                ..
            } => {
                let at = self.file_offset(request, chunk, offset, buf.len() as u64)?;
                let n = store.write(path, at, buf).map_err(ef)?;
                if sync || self.fsync_each_write {
                    store.fsync(path).map_err(ef)?;
                }
                Ok(Reply::Write { written: n as u64 })
            }
            RequestOf::Read {
                chunk, offset, len, ..
            } => {
                let at = self.file_offset(request, chunk, offset, len)?;
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                store.read_into(path, at, len, buf).map_err(ef)?;
                Ok(Reply::Read {
                    len: buf.len() as u64,
                })
            }
            RequestOf::Fsync { .. } => store.fsync(path).map(|()| Reply::Fsync).map_err(ef),
            RequestOf::Truncate { size, .. } => match store.truncate(path, size) {
                Err(e) if errno_of(&e) == libc::ENOENT => {
                    store.write(path, 0, &[]).map_err(ef)?;
                    store
                        .truncate(path, size)
                        .map(|()| Reply::Truncate)
                        .map_err(ef)
                }
                r => r.map(|()| Reply::Truncate).map_err(ef),
            },
            // Answered by the event loop itself.
            RequestOf::Ping { .. } | RequestOf::Stats | RequestOf::Shutdown { .. } => {
                Err(fail(request, libc::EINVAL, "not a storage request"))
            }
            RequestOf::Create { .. }
            | RequestOf::Open { .. }
            | RequestOf::Stat { .. }
            | RequestOf::Unlink { .. }
            | RequestOf::Readdir { .. }
            | RequestOf::Mkdir { .. }
            | RequestOf::Rmdir { .. }
            | RequestOf::CheckParent { .. }
            | RequestOf::Link { .. }
            | RequestOf::Setattr { .. }
            | RequestOf::Statfs
            | RequestOf::Symlink { .. }
            | RequestOf::Readlink { .. }
            | RequestOf::LinkCount { .. } => self.run_names(request, buf),
        }
    }
}
