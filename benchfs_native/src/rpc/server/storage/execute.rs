//! What each request does to the chunk store (the semantics of
//! /docs/RPC.md, "Operations"): the decoded request itself, its path
//! owned ([`OwnedRequest`]), is what a storage thread is handed, and its
//! answer is the reply to send. Runs on the storage pool's threads with
//! the blocking, thread-safe [`ChunkStore`] API, or, for a data read or
//! write the ring takes, is started there by the event loop (the ring's
//! side of it in [`super::ring`]); owns nothing of UCX.

use std::ffi::CString;
use std::fs;
use std::os::fd::AsFd as _;
use std::os::unix::fs::MetadataExt as _;
use std::sync::Arc;
use std::time::Instant;

use super::job::{Failure, Job, Outcome, engine_fail, errno_of, fail, io_fail};
use super::names::{Names, pick};
use crate::error::Error;
use crate::rpc::server::clock::unix_now_ns;
use crate::rpc::wire::{self, Attr, OwnedRequest, Reply, RequestOf, SET_ATIME, SET_MTIME};
use crate::storage::buffer::FixedBuf;
use crate::storage::store::{Completions, ReadAnswer};
use crate::storage::{ChunkStore, layout};
use crate::sys;

/// Executes jobs against one store.
#[derive(Debug)]
pub struct Storage {
    store: Arc<ChunkStore>,
    chunk_size: u64,
    fsync_each_write: bool,
    names: Names,
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
    /// Jobs on `store` of daemon `node_id`, with an empty namespace; every
    /// write is made durable when `fsync_each_write`.
    pub fn new(store: Arc<ChunkStore>, fsync_each_write: bool, node_id: u32) -> Storage {
        Storage {
            chunk_size: store.chunk_size(),
            store,
            fsync_each_write,
            names: Names::new(node_id),
        }
    }

    /// Namespace records held (the root not counted).
    pub fn namespace_records(&self) -> usize {
        self.names.len()
    }

    /// Entries of the link table (docs/NAMESPACE.md, "Hard links").
    pub fn link_table_entries(&self) -> usize {
        self.names.link_table_len()
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

    /// Starts `job` on the store's ring; `Ok` holds the job (its buffer
    /// now with the store) until its result comes back, `Err` gives
    /// it back whole for the pool (a write's data perhaps still in `fixed`:
    /// [`Job::unfix`]). A write received into a registered buffer is
    /// written from it; a read answers with the registered buffer it was
    /// read into, sent as the reply.
    #[allow(
        clippy::result_large_err,
        reason = "the job moves whole either way; boxing it costs an allocation per request"
    )]
    pub fn start_on_ring(&self, mut job: Job, to: &Completions) -> Result<Job, Job> {
        let tag = u64::from(job.token);
        let started = match job.request {
            RequestOf::Write {
                chunk,
                offset,
                sync,
                ..
            } => {
                let len = job.fixed.as_ref().map_or(job.buf.len(), FixedBuf::len) as u64;
                let Ok(at) = self.file_offset(&job.request, chunk, offset, len) else {
                    return Err(job);
                };
                let sync = sync || self.fsync_each_write;
                let path = job.request.path();
                if let Some(data) = job.fixed.take() {
                    return match self.store.start_write_fixed(path, at, data, sync, tag, to) {
                        Ok(()) => Ok(job),
                        Err(data) => {
                            job.fixed = Some(data);
                            Err(job)
                        }
                    };
                }
                let data = std::mem::take(&mut job.buf);
                self.store.start_write(path, at, data, sync, tag, to)
            }
            RequestOf::Read {
                chunk, offset, len, ..
            } => {
                let Ok(at) = self.file_offset(&job.request, chunk, offset, len) else {
                    return Err(job);
                };
                let Ok(len) = usize::try_from(len) else {
                    return Err(job);
                };
                let out = std::mem::take(&mut job.buf);
                let answer_in = ReadAnswer::Registered;
                self.store
                    .start_read(job.request.path(), at, len, out, answer_in, tag, to)
            }
            _ => return Err(job),
        };
        match started {
            Ok(()) => Ok(job),
            Err(buf) => {
                job.buf = buf;
                Err(job)
            }
        }
    }

    /// A registered buffer to receive `job`'s write data of `len` bytes
    /// into, when the ring would start that write; `None`: receive it into
    /// a pool vector.
    pub fn write_buf(&self, job: &Job, len: usize) -> Option<FixedBuf> {
        let RequestOf::Write { chunk, offset, .. } = job.request else {
            return None;
        };
        let at = self
            .file_offset(&job.request, chunk, offset, len as u64)
            .ok()?;
        self.store.write_buf(job.request.path(), at, len)
    }

    /// Opens the backing file of data object `path` relative to the
    /// store's directory, never through a symbolic link (O_NONBLOCK: a
    /// FIFO planted in the directory must not block a thread).
    fn open_data(&self, request: &OwnedRequest) -> Result<fs::File, Failure> {
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
    fn file_offset(
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
            RequestOf::Stat { data: true, .. } => self.data_attr(request).map(|attr| Reply::Stat {
                attr,
                no_data: false,
            }),
            RequestOf::Unlink { data: true, .. } => store
                .remove(path)
                .map(|()| Reply::Unlink {
                    ino: 0,
                    linked: false,
                    no_data: false,
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
            RequestOf::Statfs => self.statfs(request),
            RequestOf::Truncate { size, .. } => {
                // The modification time is set to this daemon's clock, the
                // one that stamps the records' ctimes: the kernel may stamp
                // a change with a coarse clock, behind a record's stamp made
                // a moment before, and a file's ctime (the latest of its
                // record's and its data's) would then miss the truncate.
                let now = unix_now_ns();
                match store.truncate_stamped(path, size, now) {
                    Err(e) if errno_of(&e) == libc::ENOENT => {
                        store.write(path, 0, &[]).map_err(ef)?;
                        store.truncate_stamped(path, size, now).map_err(ef)?;
                    }
                    r => r.map_err(ef)?,
                }
                Ok(Reply::Truncate)
            }
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
            | RequestOf::Symlink { .. }
            | RequestOf::Readlink { .. }
            | RequestOf::LinkCount { .. } => self.names.run(request, buf),
        }
    }

    /// Sets the times of data object `path` that `mask` names.
    fn data_times(
        &self,
        request: &OwnedRequest,
        mask: u32,
        atime: u64,
        mtime: u64,
    ) -> Result<Reply<'static>, Failure> {
        let atime = pick(mask, SET_ATIME, atime);
        let mtime = pick(mask, SET_MTIME, mtime);
        let file: fs::File = self.open_data(request)?;
        sys::set_times(file.as_fd(), atime, mtime).map_err(|e| io_fail(request, &e))?;
        let m = file.metadata().map_err(|e| io_fail(request, &e))?;
        Ok(Reply::Setattr(attr_of(&m)))
    }

    fn statfs(&self, request: &OwnedRequest) -> Result<Reply<'static>, Failure> {
        let st = sys::statvfs(self.store.root_fd()).map_err(|e| io_fail(request, &e))?;
        let files = self.names.len() as u64;
        Ok(Reply::Statfs(wire::StatFsReply {
            block_size: st.f_frsize,
            blocks: st.f_blocks,
            blocks_free: st.f_bfree,
            blocks_avail: st.f_bavail,
            files,
            files_free: st.f_ffree,
            name_max: u32::try_from(st.f_namemax).unwrap_or(u32::MAX),
            fs_id: sys::file_system_id(self.store.root_fd()).map_err(|e| io_fail(request, &e))?,
        }))
    }
}
