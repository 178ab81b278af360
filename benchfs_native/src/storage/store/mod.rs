//! The chunk store: the public face of the storage engine.
//!
//! Callers (any thread, the GIL released) validate arguments, split a
//! request into per-chunk pieces of at most one buffer, copy data into
//! registered buffers and send each piece to the store's driver thread over
//! a channel. The driver thread owns the ring and the fd cache; it turns
//! pieces into kernel operations and sends each result (with its buffer)
//! back to the caller's reply channel. A store opened with
//! [`ChunkStore::open_driven`] has no driver thread: the thread that
//! opened it turns the ring in its own loop (`driven`).
//!
//! Waking the driver thread: it sleeps only inside the ring's
//! `io_uring_enter`, which also polls an eventfd. Before sleeping it sets
//! `parked` and looks at the channel once more; a caller that sent a request
//! writes the eventfd only when it sees `parked` (a SeqCst fence on both
//! sides makes one of them see the other). So an idle store submits a
//! request at once, a busy one batches what piled up, and nobody spins or
//! sleeps on a timer.
//!
//! * `options`: [`StoreOptions`] and the store's limits.
//! * `request`: what callers send the driver thread and what comes back.
//! * `answer`: why a piece failed, and where a request started without
//!   waiting is answered.
//! * `batch`: the pieces of one call in flight.
//! * `io`: blocking reads and writes, split into pieces of one buffer.
//! * `ring_thread`: the driver thread, which owns the ring.
//! * `ring_parts`: what the driver is made of, and the ring built from it
//!   on the opening thread or on a driver thread.
//! * `driven`: the ring turned by the thread that opened the store instead
//!   ([`ChunkStore::open_driven`]: the daemon's event loop).
//! * `submit`: requests started without waiting, answered on a channel
//!   (the daemon's event loop uses these for data).

mod answer;
mod batch;
mod driven;
mod io;
mod options;
mod request;
mod ring_parts;
mod ring_thread;
mod submit;

use std::fmt;
use std::fs::File;
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;

use self::answer::note_failure;
pub use self::answer::{Completions, Finished, ReadAnswer};
use self::batch::Batch;
use self::driven::Driven;
pub use self::options::{
    MAX_BUFFER, MAX_CHUNK, MAX_OFFSET, MAX_POOL_BYTES, MAX_READ, StoreOptions,
};
use self::request::{Done, Msg, ReqKind, Request};
use self::ring_parts::RingParts;
use super::buffer::BufferPool;
use super::driver::RingSetup;
use super::fd_cache::FdCache;
use super::layout;
use super::stats::{Counters, StoreStats};
use crate::error::{Error, Result};
use crate::sys::{self, DioAlign, ParkWake};
use crate::trace::TraceFile;

/// A chunk store rooted at a local directory. See the module docs.
pub struct ChunkStore {
    root: PathBuf,
    root_fd: Arc<OwnedFd>,
    root_str: String,
    chunk_size: u64,
    buffered: bool,
    dio: Option<DioAlign>,
    pool: BufferPool,
    counters: Arc<Counters>,
    setup: RingSetup,
    tx: RwLock<Option<Sender<Msg>>>,
    wake: Arc<ParkWake>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// The ring, when the opening thread turns it (no driver thread).
    driven: Option<Driven>,
    trace_path: Option<PathBuf>,
    owner_pid: u32,
}

impl fmt::Debug for ChunkStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChunkStore")
            .field("root", &self.root)
            .field("chunk_size", &self.chunk_size)
            .field("setup", &self.setup)
            .field("dio", &self.dio)
            .finish()
    }
}

impl ChunkStore {
    /// Opens (creating the directory if needed) the store at `root` and
    /// starts its driver thread.
    pub fn open(root: impl AsRef<Path>, opts: StoreOptions) -> Result<ChunkStore> {
        ChunkStore::open_with(root.as_ref(), opts, false)
    }

    /// Opens the store with its ring turned by the calling thread rather
    /// than a driver thread: that thread must call [`ChunkStore::drive`]
    /// often and sleep on [`ChunkStore::driven_wake`] (the daemon's event
    /// loop). Other threads use the store as always; their calls wait for
    /// the owner's turns.
    pub fn open_driven(root: impl AsRef<Path>, opts: StoreOptions) -> Result<ChunkStore> {
        ChunkStore::open_with(root.as_ref(), opts, true)
    }

    fn open_with(root: &Path, opts: StoreOptions, driven: bool) -> Result<ChunkStore> {
        opts.validate()?;
        let root = root.to_path_buf();
        let root_str = root.to_string_lossy().into_owned();
        std::fs::create_dir_all(&root)
            .map_err(|e| Error::from_io(&e, "create store", &root_str))?;
        if let Some(fs) = sys::network_fs(&root) {
            return Err(Error::invalid(
                "root",
                format!("{root_str} is on {fs}: io_uring on network file systems is not supported"),
            ));
        }
        let root_fd: Arc<OwnedFd> = Arc::new(
            File::open(&root)
                .map_err(|e| Error::from_io(&e, "open store", &root_str))?
                .into(),
        );
        let dio = if opts.buffered {
            None
        } else {
            sys::dio_alignment(&root)
        };
        let pool = BufferPool::new(opts.pool_buffers, opts.buffer_size)
            .map_err(|e| Error::from_io(&e, "allocate buffers", &root_str))?;
        let trace = match &opts.trace {
            Some(cfg) => Some(TraceFile::open(cfg, "store")?),
            None => None,
        };
        let trace_path = trace.as_ref().map(|t| t.path().to_path_buf());
        let counters = Arc::new(Counters::default());
        let wake = Arc::new(ParkWake::new().map_err(|e| Error::from_io(&e, "eventfd", &root_str))?);
        let (tx, rx) = mpsc::channel();
        let parts = RingParts {
            entries: opts.ring_entries.next_power_of_two(),
            pool: pool.clone(),
            counters: Arc::clone(&counters),
            wake: Arc::clone(&wake),
            fds: FdCache::new(Arc::clone(&root_fd), opts.fd_cache_capacity),
            root_fd: Arc::clone(&root_fd),
            trace,
            rx,
        };
        let (setup, thread, driven) = if driven {
            let ring = parts
                .build(true)
                .map_err(|e| Error::from_io(&e.source, e.step, &root_str))?;
            (ring.driver.setup(), None, Some(Driven::new(ring)))
        } else {
            let (setup, thread) = parts.spawn(&root_str)?;
            (setup, Some(thread), None)
        };
        Ok(ChunkStore {
            root,
            root_fd,
            root_str,
            chunk_size: opts.chunk_size,
            buffered: opts.buffered,
            dio,
            pool,
            counters,
            setup,
            tx: RwLock::new(Some(tx)),
            wake,
            thread: Mutex::new(thread),
            driven,
            trace_path,
            owner_pid: std::process::id(),
        })
    }

    /// One turn of a driven store's ring ([`ChunkStore::open_driven`]) on
    /// the thread that opened it: takes requests, submits them, answers
    /// what completed, never waits. Whether anything happened; `false`
    /// from any other thread or for a store with a driver thread.
    #[inline]
    pub fn drive(&self) -> bool {
        self.driven.as_ref().is_some_and(Driven::turn)
    }

    /// A driven store's eventfd, for its owner to sleep on: park it
    /// ([`ParkWake::park`]), drain it, [`ChunkStore::drive`] once more,
    /// and sleep only if that did nothing. Written by other threads'
    /// requests while parked and by the kernel on completions. `None` for
    /// a store with a driver thread.
    pub fn driven_wake(&self) -> Option<&ParkWake> {
        self.driven.as_ref().map(|_| &*self.wake)
    }

    /// Whether the calling thread turns this store's ring: its blocking
    /// calls then turn the ring themselves while they wait.
    fn drives_here(&self) -> bool {
        self.driven.as_ref().is_some_and(Driven::here)
    }

    /// Waits for progress on a driven store's ring, from its owner thread.
    fn drive_waiting(&self) {
        if let Some(d) = &self.driven {
            d.turn_waiting();
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The root directory's descriptor: files are opened relative to it
    /// ([`crate::sys::open_beneath`]), never by joined path.
    pub fn root_fd(&self) -> BorrowedFd<'_> {
        self.root_fd.as_fd()
    }

    /// Bytes per chunk.
    pub fn chunk_size(&self) -> u64 {
        self.chunk_size
    }

    /// How the ring was set up.
    pub fn ring_setup(&self) -> RingSetup {
        self.setup
    }

    /// O_DIRECT alignment in use, `None` when every request is buffered.
    pub fn dio_alignment(&self) -> Option<DioAlign> {
        if self.buffered { None } else { self.dio }
    }

    /// The trace file, when recording.
    pub fn trace_path(&self) -> Option<&Path> {
        self.trace_path.as_deref()
    }

    /// Counters of the ring, the pool and the fd cache.
    pub fn stats(&self) -> StoreStats {
        StoreStats {
            pool_buffers: self.pool.count() as u64,
            pool_free: self.pool.free_count() as u64,
            pool_waits: self.pool.waits(),
            ..self.counters.snapshot()
        }
    }

    /// Whether [`ChunkStore::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.tx
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    fn send(&self, req: Request) -> Result<()> {
        // A request not taken is dropped here, which answers it `Closed`.
        self.try_send(req).map_err(|_| Error::Closed)
    }

    /// Hands `req` to the driver thread; gives it back when the store is
    /// closed (or its thread gone), boxed: only that rare path pays.
    fn try_send(&self, req: Request) -> std::result::Result<(), Box<Request>> {
        {
            let guard = self.tx.read().unwrap_or_else(PoisonError::into_inner);
            let Some(tx) = guard.as_ref() else {
                return Err(Box::new(req));
            };
            // The owner of a driven ring hands its requests over directly.
            let req = match &self.driven {
                Some(d) => match d.take(req) {
                    Ok(()) => return Ok(()),
                    Err(req) => req,
                },
                None => req,
            };
            if let Err(mpsc::SendError(msg)) = tx.send(Msg::Io(req)) {
                return match msg {
                    Msg::Io(req) => Err(Box::new(req)),
                    Msg::Shutdown => Ok(()),
                };
            }
        }
        self.wake.notify_if_parked();
        Ok(())
    }

    fn check_open(&self) -> Result<()> {
        if std::process::id() != self.owner_pid {
            return Err(Error::Forked {
                owner: self.owner_pid,
            });
        }
        if self.is_closed() {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    #[inline]
    fn use_direct(&self, offset: u64, len: usize, addr: usize) -> bool {
        !self.buffered && self.dio.is_some_and(|a| a.allows(offset, len, addr))
    }

    fn single(&self, op: &'static str, path: &str, kind: impl FnOnce() -> ReqKind) -> Result<u64> {
        let name: Arc<str> = layout::backing_name(path)?.into();
        self.check_open()?;
        let mut batch = Batch::new(self, name);
        let mut value = 0;
        let mut on_done = |d: Done, batch_err: &mut Option<Error>| match d.result {
            Ok(v) => value = v,
            Err(f) => note_failure(batch_err, f, op, path),
        };
        batch.submit(0, kind())?;
        batch.finish(&mut on_done)?;
        Ok(value)
    }

    /// fsync the file (data and metadata). Only on request: writes never
    /// sync by themselves.
    pub fn fsync(&self, path: &str) -> Result<()> {
        self.single("fsync", path, || ReqKind::Fsync).map(|_| ())
    }

    /// Sets the file's size (`ENOENT` when it does not exist).
    pub fn truncate(&self, path: &str, size: u64) -> Result<()> {
        self.truncate_with(path, size, None)
    }

    /// [`ChunkStore::truncate`], then the file's modification time set to
    /// `mtime_ns` (nanoseconds since the epoch) on the same descriptor.
    pub fn truncate_stamped(&self, path: &str, size: u64, mtime_ns: u64) -> Result<()> {
        self.truncate_with(path, size, Some(mtime_ns))
    }

    fn truncate_with(&self, path: &str, size: u64, mtime_ns: Option<u64>) -> Result<()> {
        check_range(size, 0).map_err(|_| {
            Error::invalid(
                "size",
                format!("must be between 0 and {MAX_OFFSET}, got {size}"),
            )
        })?;
        self.single("truncate", path, || ReqKind::Truncate { size, mtime_ns })
            .map(|_| ())
    }

    /// Deletes the file with all its chunks.
    pub fn remove(&self, path: &str) -> Result<()> {
        self.single("remove", path, || ReqKind::Remove).map(|_| ())
    }

    /// The file's size.
    pub fn stat(&self, path: &str) -> Result<u64> {
        self.single("stat", path, || ReqKind::Stat)
    }

    /// Logical paths of the files in the store, sorted.
    pub fn list(&self) -> Result<Vec<String>> {
        self.check_open()?;
        let err = |e: std::io::Error| Error::from_io(&e, "list", &self.root_str);
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.root).map_err(err)? {
            let entry = entry.map_err(err)?;
            if !entry.file_type().map_err(err)?.is_file() {
                continue;
            }
            if let Some(p) = entry.file_name().to_str().and_then(layout::logical_path) {
                out.push(p);
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Waits for operations in flight, flushes the trace and stops the
    /// driver thread (a driven store: answers what its ring accepted, when
    /// called on the owner thread). Idempotent; later calls on the store fail with
    /// [`Error::Closed`].
    pub fn close(&self) -> Result<()> {
        if std::process::id() != self.owner_pid {
            // A fork() child: the driver thread is not in this process, so
            // there is nothing to stop or join (the ring and the buffers in
            // flight are the parent's). Touch no lock another thread may
            // have held at fork time; leak the thread handle.
            if let Ok(mut thread) = self.thread.try_lock() {
                let _ = std::mem::ManuallyDrop::new(thread.take());
            }
            return Ok(());
        }
        let tx = self
            .tx
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(tx) = tx {
            let _ = tx.send(Msg::Shutdown);
            drop(tx);
            self.wake.notify_if_parked();
        }
        if let Some(d) = &self.driven {
            d.finish();
        }
        let mut thread = self.thread.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = thread.take()
            && t.join().is_err()
        {
            return Err(Error::os(
                libc::EIO,
                "close (driver thread panicked)",
                &self.root_str,
            ));
        }
        Ok(())
    }
}

impl Drop for ChunkStore {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

fn check_range(offset: u64, len: usize) -> Result<()> {
    if offset > MAX_OFFSET || (len as u64) > MAX_OFFSET - offset {
        return Err(Error::invalid(
            "offset",
            format!("offset + length must be at most {MAX_OFFSET}, got {offset} + {len}"),
        ));
    }
    Ok(())
}
