//! The chunk store: the public face of the storage engine.
//!
//! Callers (any thread, the GIL released) validate arguments, split a
//! request into per-chunk pieces of at most one buffer, copy data into
//! registered buffers and send each piece to the store's driver thread over
//! a channel. The driver thread owns the ring and the fd cache; it turns
//! pieces into kernel operations and sends each result (with its buffer)
//! back to the caller's reply channel.
//!
//! Waking the driver thread: it sleeps only inside the ring's
//! `io_uring_enter`, which also polls an eventfd. Before sleeping it sets
//! `parked` and looks at the channel once more; a caller that sent a request
//! writes the eventfd only when it sees `parked` (a SeqCst fence on both
//! sides makes one of them see the other). So an idle store submits a
//! request at once, a busy one batches what piled up, and nobody spins or
//! sleeps on a timer.

use std::ffi::CString;
use std::fmt;
use std::fs::File;
use std::os::fd::{AsFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering, fence};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::Instant;

use super::buffer::{BufferPool, FixedBuf, MAX_BUFFERS};
use super::driver::{Completion, Driver, RingSetup};
use super::fd_cache::{Access, FdCache, Mode, Opened};
use super::layout::{self, Piece};
use super::ops::{Fsync, Ftruncate, Op, Read, Statx, Unlink, Write};
use super::stats::{Counters, StoreStats, bump};
use super::sys::{self, DioAlign};
use crate::error::{Error, Result};
use crate::trace::{TraceBuffer, TraceConfig, TraceFile};

/// Largest `length` of one read call (1 GiB).
pub const MAX_READ: usize = 1 << 30;
/// Largest chunk size (1 GiB).
pub const MAX_CHUNK: u64 = 1 << 30;
/// Largest buffer size (256 MiB).
pub const MAX_BUFFER: usize = 256 << 20;
/// Largest total registered memory of one store (16 GiB).
pub const MAX_POOL_BYTES: usize = 16 << 30;
/// Largest file offset + length the store accepts (2^62).
pub const MAX_OFFSET: u64 = 1 << 62;

/// Options of [`ChunkStore::open`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOptions {
    /// Bytes per chunk: a multiple of 512, at most 1 GiB. Default 4 MiB.
    pub chunk_size: u64,
    /// Bytes per registered buffer (the largest single I/O): a multiple of
    /// 4096, at most 256 MiB. Default 1 MiB.
    pub buffer_size: usize,
    /// Registered buffers (the most I/Os in flight): 1..=16384. Default 64.
    pub pool_buffers: usize,
    /// SQ entries of the ring, 1..=32768 (rounded up to a power of two).
    pub ring_entries: u32,
    /// Never use O_DIRECT.
    pub buffered: bool,
    /// Record a trace.
    pub trace: Option<TraceConfig>,
    /// Open descriptors kept by the fd cache.
    pub fd_cache_capacity: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            chunk_size: 4 << 20,
            buffer_size: 1 << 20,
            pool_buffers: 64,
            ring_entries: 256,
            buffered: false,
            trace: None,
            fd_cache_capacity: 512,
        }
    }
}

impl StoreOptions {
    /// Checks every option, naming the bad one.
    pub fn validate(&self) -> Result<()> {
        if self.chunk_size < 512
            || self.chunk_size > MAX_CHUNK
            || !self.chunk_size.is_multiple_of(512)
        {
            return Err(Error::invalid(
                "chunk_size",
                format!(
                    "must be a multiple of 512 between 512 and {MAX_CHUNK}, got {}",
                    self.chunk_size
                ),
            ));
        }
        if self.buffer_size < 4096
            || self.buffer_size > MAX_BUFFER
            || !self.buffer_size.is_multiple_of(4096)
        {
            return Err(Error::invalid(
                "buffer_size",
                format!(
                    "must be a multiple of 4096 between 4096 and {MAX_BUFFER}, got {}",
                    self.buffer_size
                ),
            ));
        }
        if self.pool_buffers == 0 || self.pool_buffers > MAX_BUFFERS {
            return Err(Error::invalid(
                "pool_buffers",
                format!(
                    "must be between 1 and {MAX_BUFFERS}, got {}",
                    self.pool_buffers
                ),
            ));
        }
        if self.pool_buffers.saturating_mul(self.buffer_size) > MAX_POOL_BYTES {
            return Err(Error::invalid(
                "pool_buffers",
                format!(
                    "pool_buffers * buffer_size must be at most {MAX_POOL_BYTES} bytes, got {} * {}",
                    self.pool_buffers, self.buffer_size
                ),
            ));
        }
        if self.ring_entries == 0 || self.ring_entries > 32768 {
            return Err(Error::invalid(
                "ring_entries",
                format!("must be between 1 and 32768, got {}", self.ring_entries),
            ));
        }
        if self.fd_cache_capacity == 0 {
            return Err(Error::invalid("fd_cache_capacity", "must be at least 1"));
        }
        if let Some(t) = &self.trace {
            crate::trace::writer::validate_node(&t.node)?;
        }
        Ok(())
    }
}

/// Why a piece failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    Errno(i32),
    Closed,
}

/// A piece's result, sent back to its caller.
struct Done {
    index: usize,
    want: usize,
    result: std::result::Result<u64, Failure>,
    buf: Option<FixedBuf>,
}

/// Where a piece's result goes. Dropping a `Reply` that was not answered
/// answers it with `Closed`, so a caller never waits for a lost request.
struct Reply {
    tx: Option<Sender<Done>>,
    index: usize,
    want: usize,
    done_bytes: u64,
}

impl Reply {
    fn send(mut self, result: std::result::Result<u64, Failure>, buf: Option<FixedBuf>) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Done {
                index: self.index,
                want: self.want,
                result,
                buf,
            });
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Done {
                index: self.index,
                want: self.want,
                result: Err(Failure::Closed),
                buf: None,
            });
        }
    }
}

enum ReqKind {
    Write {
        offset: u64,
        buf: FixedBuf,
        direct: bool,
    },
    Read {
        offset: u64,
        buf: FixedBuf,
        len: usize,
        direct: bool,
    },
    Fsync,
    Truncate {
        size: u64,
    },
    Remove,
    Stat,
}

struct Request {
    name: Arc<str>,
    kind: ReqKind,
    reply: Reply,
    queued_at: Instant,
}

enum Msg {
    Io(Request),
    Shutdown,
}

/// The driver thread's wake-up: an eventfd polled by the ring, written
/// only while the thread is parked.
struct Wake {
    fd: OwnedFd,
    parked: AtomicBool,
}

impl Wake {
    fn notify(&self) {
        fence(Ordering::SeqCst);
        if self.parked.load(Ordering::Relaxed) {
            let _ = sys::eventfd_signal(self.fd.as_fd());
        }
    }
}

/// A chunk store rooted at a local directory. See the module docs.
pub struct ChunkStore {
    root: PathBuf,
    root_str: String,
    chunk_size: u64,
    buffered: bool,
    dio: Option<DioAlign>,
    pool: BufferPool,
    counters: Arc<Counters>,
    setup: RingSetup,
    tx: RwLock<Option<Sender<Msg>>>,
    wake: Arc<Wake>,
    thread: Mutex<Option<JoinHandle<()>>>,
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
        opts.validate()?;
        let root = root.as_ref().to_path_buf();
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
        let wake = Arc::new(Wake {
            fd: sys::eventfd().map_err(|e| Error::from_io(&e, "eventfd", &root_str))?,
            parked: AtomicBool::new(false),
        });
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let worker_pool = pool.clone();
        let worker_counters = Arc::clone(&counters);
        let worker_wake = Arc::clone(&wake);
        let fds = FdCache::new(root.clone(), opts.fd_cache_capacity);
        let entries = opts.ring_entries.next_power_of_two();
        let thread = std::thread::Builder::new()
            .name("benchfs-store".into())
            .spawn(move || {
                // The ring is single-issuer: build it on the thread using it.
                let trace = trace.map(TraceBuffer::new);
                let mut driver = match Driver::new(
                    entries,
                    Some(&worker_pool),
                    worker_counters.clone(),
                    trace,
                ) {
                    Ok(d) => d,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                driver.set_wake_fd(std::os::fd::AsRawFd::as_raw_fd(&worker_wake.fd));
                let _ = ready_tx.send(Ok(driver.setup()));
                Worker {
                    driver,
                    fds,
                    root_fd,
                    counters: worker_counters,
                    wake: worker_wake,
                    rx,
                    done: Vec::new(),
                }
                .run();
            })
            .map_err(|e| Error::from_io(&e, "start driver thread", &root_str))?;
        let setup = match ready_rx.recv() {
            Ok(Ok(setup)) => setup,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(Error::from_io(&e.source, e.step, &root_str));
            }
            Err(_) => {
                let _ = thread.join();
                return Err(Error::os(libc::EIO, "set up io_uring", &root_str));
            }
        };
        Ok(ChunkStore {
            root,
            root_str,
            chunk_size: opts.chunk_size,
            buffered: opts.buffered,
            dio,
            pool,
            counters,
            setup,
            tx: RwLock::new(Some(tx)),
            wake,
            thread: Mutex::new(Some(thread)),
            trace_path,
            owner_pid: std::process::id(),
        })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
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
        {
            let guard = self.tx.read().unwrap_or_else(PoisonError::into_inner);
            let tx = guard.as_ref().ok_or(Error::Closed)?;
            tx.send(Msg::Io(req)).map_err(|_| Error::Closed)?;
        }
        self.wake.notify();
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

    /// Writes `data` at `offset` of `path`; returns the bytes written.
    /// An empty `data` creates the file if it does not exist.
    pub fn write(&self, path: &str, offset: u64, data: &[u8]) -> Result<usize> {
        let name: Arc<str> = layout::backing_name(path)?.into();
        check_range(offset, data.len())?;
        self.check_open()?;
        let mut batch = Batch::new(self, name);
        let mut written = 0u64;
        let mut on_done = |d: Done, batch_err: &mut Option<Error>| match d.result {
            Ok(n) => written += n,
            Err(f) => note_failure(batch_err, f, "write", path),
        };
        if data.is_empty() {
            let mut buf = batch.acquire(&mut on_done);
            buf.set_len(0);
            batch.submit(
                0,
                ReqKind::Write {
                    offset,
                    buf,
                    direct: false,
                },
            )?;
        }
        let buf_size = self.pool.buf_size();
        for p in layout::pieces(offset, data.len(), self.chunk_size, buf_size) {
            if batch.err.is_some() {
                break;
            }
            let mut buf = batch.acquire(&mut on_done);
            buf.fill_from(&data[p.data_offset..p.data_offset + p.len]);
            let direct = self.use_direct(p.file_offset, p.len, buf.addr());
            batch.submit(
                p.len,
                ReqKind::Write {
                    offset: p.file_offset,
                    buf,
                    direct,
                },
            )?;
        }
        batch.finish(&mut on_done)?;
        Ok(usize::try_from(written).unwrap_or(usize::MAX))
    }

    /// Reads up to `len` bytes at `offset` of `path`: shorter at the end
    /// of the file, holes read as zeros.
    pub fn read(&self, path: &str, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_into(path, offset, len, &mut out)?;
        Ok(out)
    }

    /// [`ChunkStore::read`] into `out` (cleared first), reusing its
    /// capacity: a caller that keeps its buffers allocates nothing.
    pub fn read_into(&self, path: &str, offset: u64, len: usize, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let name: Arc<str> = layout::backing_name(path)?.into();
        if len > MAX_READ {
            return Err(Error::invalid(
                "length",
                format!("must be at most {MAX_READ} bytes (1 GiB), got {len}"),
            ));
        }
        check_range(offset, len)?;
        self.check_open()?;
        out.resize(len, 0);
        let mut end = len;
        let mut batch = Batch::new(self, name);
        let mut on_done = |d: Done, batch_err: &mut Option<Error>| match d.result {
            Ok(n) => {
                let n = usize::try_from(n).unwrap_or(0).min(d.want);
                if let Some(buf) = &d.buf {
                    let src = &buf.as_slice()[..n.min(buf.len())];
                    out[d.index..d.index + src.len()].copy_from_slice(src);
                }
                if n < d.want {
                    end = end.min(d.index + n);
                }
            }
            Err(f) => note_failure(batch_err, f, "read", path),
        };
        let buf_size = self.pool.buf_size();
        let pieces = layout::pieces(offset, len, self.chunk_size, buf_size);
        if len == 0 {
            // Still report a missing file.
            let buf = batch.acquire(&mut on_done);
            batch.submit(
                0,
                ReqKind::Read {
                    offset,
                    buf,
                    len: 0,
                    direct: false,
                },
            )?;
        }
        for Piece {
            file_offset,
            data_offset,
            len: plen,
        } in pieces
        {
            if batch.err.is_some() {
                break;
            }
            let buf = batch.acquire(&mut on_done);
            let direct = self.use_direct(file_offset, plen, buf.addr());
            batch.index = data_offset;
            batch.submit(
                plen,
                ReqKind::Read {
                    offset: file_offset,
                    buf,
                    len: plen,
                    direct,
                },
            )?;
        }
        batch.finish(&mut on_done)?;
        out.truncate(end);
        Ok(())
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
        check_range(size, 0).map_err(|_| {
            Error::invalid(
                "size",
                format!("must be between 0 and {MAX_OFFSET}, got {size}"),
            )
        })?;
        self.single("truncate", path, || ReqKind::Truncate { size })
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
    /// driver thread. Idempotent; later calls on the store fail with
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
            self.wake.notify();
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

fn note_failure(slot: &mut Option<Error>, f: Failure, op: &'static str, path: &str) {
    if slot.is_none() {
        *slot = Some(match f {
            Failure::Errno(e) => Error::os(e, op, path),
            Failure::Closed => Error::Closed,
        });
    }
}

/// The pieces of one call in flight, with their shared reply channel.
struct Batch<'a> {
    store: &'a ChunkStore,
    name: Arc<str>,
    tx: Sender<Done>,
    rx: Receiver<Done>,
    in_flight: usize,
    index: usize,
    err: Option<Error>,
}

impl<'a> Batch<'a> {
    fn new(store: &'a ChunkStore, name: Arc<str>) -> Batch<'a> {
        let (tx, rx) = mpsc::channel();
        Batch {
            store,
            name,
            tx,
            rx,
            in_flight: 0,
            index: 0,
            err: None,
        }
    }

    /// A buffer; with the pool empty, first collects this call's own
    /// finished pieces (which return their buffers), then waits for any.
    fn acquire(&mut self, on_done: &mut impl FnMut(Done, &mut Option<Error>)) -> FixedBuf {
        let pool = &self.store.pool;
        let mut waited = false;
        loop {
            if let Some(b) = pool.try_acquire() {
                return b;
            }
            if self.in_flight == 0 {
                if waited {
                    // Counted once per acquire.
                    return pool.acquire_uncounted();
                }
                return pool.acquire();
            }
            if !waited {
                pool.note_wait();
                waited = true;
            }
            self.wait_one(on_done);
        }
    }

    fn submit(&mut self, want: usize, kind: ReqKind) -> Result<()> {
        let reply = Reply {
            tx: Some(self.tx.clone()),
            index: self.index,
            want,
            done_bytes: 0,
        };
        let req = Request {
            name: Arc::clone(&self.name),
            kind,
            reply,
            queued_at: Instant::now(),
        };
        match self.store.send(req) {
            Ok(()) => {
                self.in_flight += 1;
                Ok(())
            }
            // The request (and its reply) came back with the error and was
            // dropped, which sent a `Closed` result: collect it.
            Err(e) => {
                self.in_flight += 1;
                let mut ignore = |_: Done, _: &mut Option<Error>| {};
                self.wait_one(&mut ignore);
                Err(e)
            }
        }
    }

    fn wait_one(&mut self, on_done: &mut impl FnMut(Done, &mut Option<Error>)) {
        match self.rx.recv() {
            Ok(d) => {
                self.in_flight -= 1;
                on_done(d, &mut self.err);
            }
            // Unreachable while `self.tx` lives; treat as closed.
            Err(_) => {
                self.in_flight = 0;
                self.err.get_or_insert(Error::Closed);
            }
        }
    }

    fn finish(mut self, on_done: &mut impl FnMut(Done, &mut Option<Error>)) -> Result<()> {
        while self.in_flight > 0 {
            self.wait_one(on_done);
        }
        match self.err.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The driver thread.
struct Worker {
    driver: Driver<Reply>,
    fds: FdCache,
    root_fd: Arc<OwnedFd>,
    counters: Arc<Counters>,
    wake: Arc<Wake>,
    rx: Receiver<Msg>,
    done: Vec<Completion<Reply>>,
}

impl Worker {
    fn run(mut self) {
        let mut shutdown = false;
        loop {
            // Everything that piled up while we were busy goes into one batch.
            loop {
                match self.rx.try_recv() {
                    Ok(Msg::Io(req)) => self.handle(req),
                    Ok(Msg::Shutdown) | Err(TryRecvError::Disconnected) => {
                        shutdown = true;
                        break;
                    }
                    Err(TryRecvError::Empty) => break,
                }
            }
            if shutdown && self.driver.in_flight() == 0 {
                break;
            }
            // Park: from here on callers write the eventfd.
            self.wake.parked.store(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            if !shutdown {
                match self.rx.try_recv() {
                    Ok(msg) => {
                        self.wake.parked.store(false, Ordering::Relaxed);
                        match msg {
                            Msg::Io(req) => self.handle(req),
                            Msg::Shutdown => shutdown = true,
                        }
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => {
                        // No caller can wake us any more: re-check whether
                        // anything is left before waiting.
                        self.wake.parked.store(false, Ordering::Relaxed);
                        shutdown = true;
                        continue;
                    }
                    Err(TryRecvError::Empty) => {}
                }
            }
            let res = self.driver.submit_and_wait(1);
            self.wake.parked.store(false, Ordering::Relaxed);
            if self.driver.take_woken() {
                sys::eventfd_drain(self.wake.fd.as_fd());
            }
            self.complete_ready();
            if res.is_err() {
                // The ring is unusable: stop taking requests. Dropping the
                // driver waits for what is in the kernel; the replies of
                // everything else are dropped, which answers `Closed`.
                break;
            }
        }
        self.driver.flush_trace();
    }

    fn complete_ready(&mut self) {
        let mut done = std::mem::take(&mut self.done);
        self.driver.reap(&mut done);
        for c in done.drain(..) {
            self.complete(c);
        }
        self.done = done;
    }

    fn open(&mut self, name: &Arc<str>, mode: Mode, create: bool) -> std::io::Result<Opened> {
        let o = self.fds.get(name, mode, create)?;
        if o.hit {
            bump(&self.counters.fd_cache_hits, 1);
        } else {
            bump(&self.counters.fd_cache_misses, 1);
        }
        Ok(o)
    }

    fn handle(&mut self, req: Request) {
        let Request {
            name,
            kind,
            reply,
            queued_at,
        } = req;
        let errno = |e: &std::io::Error| Failure::Errno(e.raw_os_error().unwrap_or(libc::EIO));
        let op = match kind {
            ReqKind::Write {
                offset,
                buf,
                direct,
            } => {
                let mode = Mode {
                    access: Access::ReadWrite,
                    direct,
                };
                match self.open(&name, mode, true) {
                    Ok(o) => Op::Write(Write {
                        fd: o.fd,
                        offset,
                        len: buf.len(),
                        buf,
                        buf_offset: 0,
                        direct: o.direct,
                    }),
                    Err(e) => return reply.send(Err(errno(&e)), Some(buf)),
                }
            }
            ReqKind::Read {
                offset,
                buf,
                len,
                direct,
            } => {
                let mode = Mode {
                    access: Access::Read,
                    direct,
                };
                match self.open(&name, mode, false) {
                    Ok(o) => Op::Read(Read {
                        fd: o.fd,
                        offset,
                        buf,
                        len,
                        direct: o.direct,
                    }),
                    Err(e) => return reply.send(Err(errno(&e)), Some(buf)),
                }
            }
            ReqKind::Fsync => {
                let fd = match self.fds.any(&name) {
                    Some(fd) => fd,
                    None => {
                        let mode = Mode {
                            access: Access::Read,
                            direct: false,
                        };
                        match self.open(&name, mode, false) {
                            Ok(o) => o.fd,
                            Err(e) => return reply.send(Err(errno(&e)), None),
                        }
                    }
                };
                Op::Fsync(Fsync { fd })
            }
            ReqKind::Truncate { size } => {
                let mode = Mode {
                    access: Access::ReadWrite,
                    direct: false,
                };
                let fd = match self.open(&name, mode, false) {
                    Ok(o) => o.fd,
                    Err(e) => return reply.send(Err(errno(&e)), None),
                };
                if !self.driver.supports_ftruncate() {
                    let r = sys::ftruncate(fd.as_fd(), size)
                        .map(|()| 0)
                        .map_err(|e| errno(&e));
                    return reply.send(r, None);
                }
                Op::Ftruncate(Ftruncate { fd, len: size })
            }
            ReqKind::Remove => {
                self.fds.evict_file(&name);
                let Ok(cname) = CString::new(name.as_bytes()) else {
                    return reply.send(Err(Failure::Errno(libc::EINVAL)), None);
                };
                Op::Unlink(Unlink {
                    dirfd: Arc::clone(&self.root_fd),
                    name: cname,
                })
            }
            ReqKind::Stat => {
                let Ok(cname) = CString::new(name.as_bytes()) else {
                    return reply.send(Err(Failure::Errno(libc::EINVAL)), None);
                };
                Op::Statx(Statx::new(Arc::clone(&self.root_fd), cname))
            }
        };
        self.driver.push(op, reply, queued_at);
    }

    fn complete(&mut self, c: Completion<Reply>) {
        let Completion {
            token: mut reply,
            op,
            result,
            ..
        } = c;
        let failed = (result < 0).then_some(Failure::Errno(-result));
        match op {
            Op::Write(mut w) => {
                if let Some(f) = failed {
                    return reply.send(Err(f), Some(w.buf));
                }
                let n = result as usize;
                reply.done_bytes += n as u64;
                if n < w.len {
                    if n == 0 {
                        // No progress and no error: report an I/O error
                        // rather than spin.
                        return reply.send(Err(Failure::Errno(libc::EIO)), Some(w.buf));
                    }
                    // Short write: the rest goes out as a new operation.
                    w.offset += n as u64;
                    w.buf_offset += n;
                    w.len -= n;
                    self.driver.push(Op::Write(w), reply, Instant::now());
                    return;
                }
                let total = reply.done_bytes;
                reply.send(Ok(total), Some(w.buf));
            }
            Op::Read(r) => match failed {
                Some(f) => reply.send(Err(f), Some(r.buf)),
                None => reply.send(Ok(result as u64), Some(r.buf)),
            },
            Op::Statx(s) => match failed {
                Some(f) => reply.send(Err(f), None),
                None => reply.send(Ok(s.size()), None),
            },
            Op::Fsync(_) | Op::Unlink(_) | Op::Ftruncate(_) => match failed {
                Some(f) => reply.send(Err(f), None),
                None => reply.send(Ok(0), None),
            },
        }
    }
}
