//! The Python bindings (feature `python`): the only module that knows
//! Python. Engine errors become Python exceptions here, once: OS errors as
//! `OSError(errno, message, path)` (Python picks `FileNotFoundError`, ...),
//! argument errors as `ValueError`. Every call that does I/O releases the
//! GIL (`Python::detach`).

use std::path::PathBuf;

use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyOSError, PyOverflowError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::bench::{self, BenchConfig, BenchResult, Pattern};
use crate::error::{Error, strerror};
use crate::storage::{ChunkStore, StoreOptions, StoreStats};
use crate::trace::TraceConfig;

mod registry;

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        match e {
            Error::Os { errno, op, path } => {
                PyOSError::new_err((errno, format!("{op} failed: {}", strerror(errno)), path))
            }
            Error::InvalidArgument { name, message } => {
                PyValueError::new_err(format!("{name}: {message}"))
            }
            Error::InvalidPath { path, reason } => {
                PyValueError::new_err(format!("invalid path {path:?}: {reason}"))
            }
            Error::Rpc {
                errno,
                node,
                op,
                detail,
            } => PyOSError::new_err((errno, format!("{op} on node {node} failed: {detail}"), node)),
            Error::Closed => PyValueError::new_err("I/O operation on a closed ChunkStore"),
            e @ Error::Forked { .. } => PyRuntimeError::new_err(e.to_string()),
        }
    }
}

/// A Python int in `0..=max`, else `ValueError` naming the argument.
fn int_arg(obj: &Bound<'_, PyAny>, name: &str, max: u64) -> PyResult<u64> {
    let out_of_range =
        || PyValueError::new_err(format!("{name} must be between 0 and {max}, got {obj}"));
    match obj.extract::<i64>() {
        Ok(v) => u64::try_from(v)
            .ok()
            .filter(|&v| v <= max)
            .ok_or_else(out_of_range),
        Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => Err(out_of_range()),
        Err(e) => Err(e),
    }
}

fn trace_config(
    trace_dir: Option<PathBuf>,
    node: &str,
    node_id: i64,
) -> PyResult<Option<TraceConfig>> {
    let node_id = u16::try_from(node_id).map_err(|_| {
        PyValueError::new_err(format!(
            "node_id must be between 0 and 65535, got {node_id}"
        ))
    })?;
    crate::trace::writer::validate_node(node)?;
    Ok(trace_dir.map(|dir| TraceConfig {
        dir,
        node: node.to_owned(),
        node_id,
    }))
}

fn positive(v: i64, name: &str) -> PyResult<u64> {
    u64::try_from(v)
        .map_err(|_| PyValueError::new_err(format!("{name} must not be negative, got {v}")))
}

/// A chunk store rooted at a local directory.
///
/// A file's bytes are split into ``chunk_size`` chunks; all data I/O goes
/// through one io_uring ring with registered buffers from a bounded pool.
/// When the pool is empty a call waits for a buffer instead of failing.
/// O_DIRECT is used per request when offset, length and buffer are
/// aligned, buffered I/O otherwise (or always with ``buffered=True``).
/// A store belongs to the process that opened it: in a ``fork()`` child its
/// methods raise ``RuntimeError``.
#[pyclass(frozen, name = "ChunkStore", module = "benchfs_native")]
struct PyChunkStore {
    store: ChunkStore,
    root: String,
}

#[pymethods]
impl PyChunkStore {
    /// Open (creating if needed) the store at ``root``.
    #[new]
    #[pyo3(signature = (
        root,
        *,
        chunk_size = 4194304,
        buffer_size = 1048576,
        pool_buffers = 64,
        ring_entries = 256,
        buffered = false,
        trace_dir = None,
        node = "local",
        node_id = 0,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        root: PathBuf,
        chunk_size: i64,
        buffer_size: i64,
        pool_buffers: i64,
        ring_entries: i64,
        buffered: bool,
        trace_dir: Option<PathBuf>,
        node: &str,
        node_id: i64,
    ) -> PyResult<Self> {
        let opts = StoreOptions {
            chunk_size: positive(chunk_size, "chunk_size")?,
            buffer_size: usize::try_from(positive(buffer_size, "buffer_size")?)
                .unwrap_or(usize::MAX),
            pool_buffers: usize::try_from(positive(pool_buffers, "pool_buffers")?)
                .unwrap_or(usize::MAX),
            ring_entries: u32::try_from(positive(ring_entries, "ring_entries")?)
                .unwrap_or(u32::MAX),
            buffered,
            trace: trace_config(trace_dir, node, node_id)?,
            ..StoreOptions::default()
        };
        let shown = root.to_string_lossy().into_owned();
        let store = py.detach(|| ChunkStore::open(&root, opts))?;
        Ok(PyChunkStore { store, root: shown })
    }

    /// The store's root directory.
    #[getter]
    fn root(&self) -> &str {
        &self.root
    }

    /// Bytes per chunk.
    #[getter]
    fn chunk_size(&self) -> u64 {
        self.store.chunk_size()
    }

    /// Write ``data`` at ``offset`` of ``path``; return the bytes written.
    ///
    /// The write is split per chunk; it is not synced (see ``fsync``). An
    /// empty ``data`` creates a missing file without extending it.
    fn write(
        &self,
        py: Python<'_>,
        path: &str,
        offset: &Bound<'_, PyAny>,
        data: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        let offset = int_arg(offset, "offset", crate::storage::store::MAX_OFFSET)?;
        let view = PyUntypedBuffer::get(data)?;
        if !view.is_c_contiguous() {
            return Err(PyValueError::new_err("data must be a C-contiguous buffer"));
        }
        let len = view.len_bytes();
        let bytes: &[u8] = if len == 0 {
            &[]
        } else {
            // Safety: `view` holds a buffer export of `data` until the end
            // of this function, so the exporter keeps the `len` bytes at
            // `buf_ptr` alive and unresized (a bytearray refuses to resize
            // while exported). Another Python thread could still mutate the
            // contents while the GIL is released: the bytes written are
            // then unspecified, as with any C extension that releases the
            // GIL around a copy.
            unsafe { std::slice::from_raw_parts(view.buf_ptr().cast::<u8>(), len) }
        };
        let store = &self.store;
        let n = py.detach(|| store.write(path, offset, bytes))?;
        drop(view);
        Ok(n)
    }

    /// Read up to ``length`` bytes at ``offset``; shorter at end of file.
    ///
    /// Holes read as zeros; ``length`` is at most 1 GiB.
    fn read<'py>(
        &self,
        py: Python<'py>,
        path: &str,
        offset: &Bound<'py, PyAny>,
        length: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let offset = int_arg(offset, "offset", crate::storage::store::MAX_OFFSET)?;
        let length = int_arg(length, "length", crate::storage::store::MAX_READ as u64)?;
        let store = &self.store;
        let data =
            py.detach(|| store.read(path, offset, usize::try_from(length).unwrap_or(usize::MAX)))?;
        Ok(PyBytes::new(py, &data))
    }

    /// Make the file's data durable.
    fn fsync(&self, py: Python<'_>, path: &str) -> PyResult<()> {
        let store = &self.store;
        Ok(py.detach(|| store.fsync(path))?)
    }

    /// Set the file's size (``FileNotFoundError`` if it does not exist).
    fn truncate(&self, py: Python<'_>, path: &str, size: &Bound<'_, PyAny>) -> PyResult<()> {
        let size = int_arg(size, "size", crate::storage::store::MAX_OFFSET)?;
        let store = &self.store;
        Ok(py.detach(|| store.truncate(path, size))?)
    }

    /// Delete the file and all its chunks.
    fn remove(&self, py: Python<'_>, path: &str) -> PyResult<()> {
        let store = &self.store;
        Ok(py.detach(|| store.remove(path))?)
    }

    /// Size of the file.
    fn stat<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyDict>> {
        let store = &self.store;
        let size = py.detach(|| store.stat(path))?;
        let d = PyDict::new(py);
        d.set_item("path", path)?;
        d.set_item("size", size)?;
        Ok(d)
    }

    /// Paths of the files held in the store.
    fn list(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let store = &self.store;
        Ok(py.detach(|| store.list())?)
    }

    /// Counters of the ring, the buffer pool and the fd cache.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let StoreStats {
            submits,
            sqes,
            completed_ops,
            in_flight,
            pool_buffers,
            pool_free,
            pool_waits,
            direct_ops,
            buffered_ops,
            fd_cache_hits,
            fd_cache_misses,
        } = self.store.stats();
        let d = PyDict::new(py);
        for (k, v) in [
            ("submits", submits),
            ("sqes", sqes),
            ("completed_ops", completed_ops),
            ("in_flight", in_flight),
            ("pool_buffers", pool_buffers),
            ("pool_free", pool_free),
            ("pool_waits", pool_waits),
            ("direct_ops", direct_ops),
            ("buffered_ops", buffered_ops),
            ("fd_cache_hits", fd_cache_hits),
            ("fd_cache_misses", fd_cache_misses),
        ] {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// Wait for operations in flight, flush the trace and release the ring.
    ///
    /// Idempotent; any later call on the store raises ``ValueError``.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let store = &self.store;
        Ok(py.detach(|| store.close())?)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*exc))]
    fn __exit__(&self, py: Python<'_>, exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
        let _ = exc;
        self.close(py)
    }

    fn __repr__(&self) -> String {
        format!(
            "ChunkStore({:?}, chunk_size={}{})",
            self.root,
            self.store.chunk_size(),
            if self.store.is_closed() {
                ", closed"
            } else {
                ""
            }
        )
    }
}

/// Version, cargo profile and git revision the extension was built from.
#[pyfunction]
fn build_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let b = crate::build_info::build_info();
    let d = PyDict::new(py);
    d.set_item("version", b.version)?;
    d.set_item("profile", b.profile)?;
    d.set_item("git_revision", b.git_revision)?;
    d.set_item("rustc", b.rustc)?;
    Ok(d)
}

fn bench_dict<'py>(py: Python<'py>, r: &BenchResult) -> PyResult<Bound<'py, PyDict>> {
    let lat = PyDict::new(py);
    lat.set_item("count", r.latency.count)?;
    lat.set_item("mean_ns", r.latency.mean_ns)?;
    lat.set_item("p50_ns", r.latency.p50_ns)?;
    lat.set_item("p90_ns", r.latency.p90_ns)?;
    lat.set_item("p99_ns", r.latency.p99_ns)?;
    lat.set_item("p999_ns", r.latency.p999_ns)?;
    lat.set_item("max_ns", r.latency.max_ns)?;
    let d = PyDict::new(py);
    d.set_item("pattern", r.pattern)?;
    d.set_item("block_size", r.block_size)?;
    d.set_item("queue_depth", r.queue_depth)?;
    d.set_item("files", r.files)?;
    d.set_item("bytes", r.bytes)?;
    d.set_item("ops", r.ops)?;
    d.set_item("seconds", r.seconds)?;
    d.set_item("MiBps", r.mib_per_s)?;
    d.set_item("iops", r.iops)?;
    d.set_item("latency", lat)?;
    d.set_item("io_depth_mean", r.io_depth_mean)?;
    d.set_item("direct", r.direct)?;
    Ok(d)
}

/// Run one storage pattern with the hot loop in Rust.
///
/// ``total_bytes`` is split evenly over ``files`` files named
/// ``bench.<i>`` in ``root``; reads expect the files of an earlier write.
/// ``queue_depth`` operations are kept in flight. Write patterns first
/// reserve each file's size (``fallocate``), as fio does. With ``trace_dir``
/// the run is recorded as ``trace-<node>-<pid>.bftrace``.
#[pyfunction]
#[pyo3(signature = (
    root,
    *,
    pattern,
    block_size,
    queue_depth,
    total_bytes,
    files = 1,
    direct = true,
    trace_dir = None,
    node = "local",
    node_id = 0,
))]
#[allow(clippy::too_many_arguments)]
fn bench_storage<'py>(
    py: Python<'py>,
    root: PathBuf,
    pattern: &str,
    block_size: i64,
    queue_depth: i64,
    total_bytes: &Bound<'py, PyAny>,
    files: i64,
    direct: bool,
    trace_dir: Option<PathBuf>,
    node: &str,
    node_id: i64,
) -> PyResult<Bound<'py, PyDict>> {
    let cfg = BenchConfig {
        root,
        pattern: Pattern::parse(pattern)?,
        block_size: usize::try_from(positive(block_size, "block_size")?).unwrap_or(usize::MAX),
        queue_depth: usize::try_from(positive(queue_depth, "queue_depth")?).unwrap_or(usize::MAX),
        total_bytes: int_arg(total_bytes, "total_bytes", 1 << 50)?,
        files: usize::try_from(positive(files, "files")?).unwrap_or(usize::MAX),
        direct,
        trace: trace_config(trace_dir, node, node_id)?,
    };
    let r = py.detach(|| bench::run(&cfg))?;
    bench_dict(py, &r)
}

// ------------------------------------------------------------ RPC client
//
// `benchfs_native.Client` and the placement functions. The client's UCX
// objects are `!Send`; the pyclass is `unsendable`, so only the thread that
// created it ever reaches them, and `Python::detach` runs its closure on
// that same thread.

use crate::membership::Expected;
use crate::placement::Placement;
use crate::rpc::client::{Client, ClientOptions, PhaseResult, PhaseSpec};
use crate::rpc::transport::Transport;

/// A value that crosses into a `py.detach` closure and back on the thread
/// that owns it.
struct OnThisThread<T>(T);

// Safety: used only by `PyClient` (an `unsendable` pyclass, so only its
// creating thread can call it) around `Python::detach`, which runs the
// closure on the calling thread: the wrapped `!Send` UCX objects never
// reach another thread.
unsafe impl<T> Send for OnThisThread<T> {}

impl<T> OnThisThread<T> {
    /// Takes the value (a method, so a closure captures the whole wrapper).
    fn get(self) -> T {
        self.0
    }
}

fn seconds(v: f64, name: &str) -> PyResult<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(v)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| PyValueError::new_err(format!("{name} must be positive, got {v}")))
}

fn node_count(nodes: i64) -> PyResult<u32> {
    u32::try_from(nodes)
        .ok()
        .filter(|n| (1..=crate::placement::MAX_NODES).contains(n))
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "nodes must be between 1 and {}, got {nodes}",
                crate::placement::MAX_NODES
            ))
        })
}

fn expected_nodes(obj: &Bound<'_, PyAny>) -> PyResult<Expected> {
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyValueError::new_err(
            "expected_nodes must be a count or a list of node names",
        ));
    }
    if let Ok(n) = obj.extract::<i64>() {
        let n = usize::try_from(n).ok().filter(|&n| n >= 1).ok_or_else(|| {
            PyValueError::new_err(format!("expected_nodes must be at least 1, got {n}"))
        })?;
        return Ok(Expected::Count(n));
    }
    if obj.is_instance_of::<pyo3::types::PyString>() {
        return Err(PyValueError::new_err(
            "expected_nodes must be a count or a list of node names, not a string",
        ));
    }
    let names: Vec<String> = obj.extract()?;
    if names.is_empty() {
        return Err(PyValueError::new_err("expected_nodes is an empty list"));
    }
    Ok(Expected::Names(names))
}

/// A client of the BenchFS daemons of one registry.
#[pyclass(unsendable, name = "Client", module = "benchfs_native")]
struct PyClient {
    client: Client,
}

impl PyClient {
    /// Runs `f` on the client with the GIL released.
    fn run<T: Send>(
        &mut self,
        py: Python<'_>,
        f: impl FnOnce(&mut Client) -> crate::error::Result<T> + Send,
    ) -> PyResult<T> {
        let c = OnThisThread(&mut self.client);
        Ok(py.detach(move || f(c.get()))?)
    }
}

fn attr_dict<'py>(py: Python<'py>, a: &crate::rpc::wire::Attr) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("size", a.size)?;
    d.set_item("mtime_unix_ns", a.mtime_unix_ns)?;
    d.set_item("mode", a.mode)?;
    Ok(d)
}

fn phase_dict<'py>(py: Python<'py>, phase: &str, r: &PhaseResult) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("phase", phase)?;
    d.set_item("path", &r.path)?;
    d.set_item("bytes", r.bytes)?;
    d.set_item("ops", r.ops)?;
    d.set_item("ops_reached", r.ops_reached)?;
    d.set_item("total_ops", r.total_ops)?;
    d.set_item("start_unix_ns", r.start_unix_ns)?;
    d.set_item("end_unix_ns", r.end_unix_ns)?;
    d.set_item("elapsed_s", r.elapsed_s)?;
    d.set_item("open_s", r.open_s)?;
    d.set_item("io_s", r.io_s)?;
    d.set_item("close_s", r.close_s)?;
    let mut lat = Vec::with_capacity(r.latency_ns.len() * 8);
    for v in &r.latency_ns {
        lat.extend_from_slice(&v.to_le_bytes());
    }
    d.set_item("latency_ns", PyBytes::new(py, &lat))?;
    d.set_item("min_ns", r.latency.min_ns)?;
    d.set_item("mean_ns", r.latency.mean_ns)?;
    d.set_item("p50_ns", r.latency.p50_ns)?;
    d.set_item("p90_ns", r.latency.p90_ns)?;
    d.set_item("p99_ns", r.latency.p99_ns)?;
    d.set_item("p999_ns", r.latency.p999_ns)?;
    d.set_item("max_ns", r.latency.max_ns)?;
    d.set_item("errors", r.errors)?;
    d.set_item("verify_errors", r.verify_errors)?;
    d.set_item("first_bad_offset", r.first_bad_offset)?;
    d.set_item("stonewalled", r.stonewalled)?;
    d.set_item("rpcs", r.rpcs)?;
    d.set_item("retries", r.retries)?;
    Ok(d)
}

#[pymethods]
impl PyClient {
    /// Wait until the expected daemons have registered in ``registry_dir``
    /// and open a session with each.
    #[new]
    #[pyo3(signature = (
        registry_dir,
        expected_nodes,
        *,
        transport = "auto",
        connect_deadline_s = 60.0,
        rpc_deadline_s = 30.0,
        max_in_flight = 16,
        retries = 3,
        allow_partial = false,
        name = "client",
        trace_dir = None,
        fsync_on_close = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        registry_dir: PathBuf,
        expected_nodes: &Bound<'_, PyAny>,
        transport: &str,
        connect_deadline_s: f64,
        rpc_deadline_s: f64,
        max_in_flight: i64,
        retries: i64,
        allow_partial: bool,
        name: &str,
        trace_dir: Option<PathBuf>,
        fsync_on_close: Option<bool>,
    ) -> PyResult<Self> {
        let expected = self::expected_nodes(expected_nodes)?;
        let max_in_flight = usize::try_from(max_in_flight)
            .ok()
            .filter(|&n| (1..=65_536).contains(&n))
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "max_in_flight must be between 1 and 65536, got {max_in_flight}"
                ))
            })?;
        let retries = u16::try_from(retries).map_err(|_| {
            PyValueError::new_err(format!(
                "retries must be between 0 and 65535, got {retries}"
            ))
        })?;
        let options = ClientOptions {
            transport: transport.parse::<Transport>()?,
            connect_deadline: seconds(connect_deadline_s, "connect_deadline_s")?,
            rpc_deadline: seconds(rpc_deadline_s, "rpc_deadline_s")?,
            max_in_flight,
            retries,
            allow_partial,
            name: name.to_owned(),
            trace_dir,
            fsync_on_close,
        };
        let client =
            py.detach(move || Client::connect(&registry_dir, expected, options).map(OnThisThread))?;
        Ok(PyClient {
            client: client.get(),
        })
    }

    /// The daemons, by node id.
    #[getter]
    fn nodes<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.client
            .nodes()
            .iter()
            .map(|n| {
                let d = PyDict::new(py);
                d.set_item("node_name", &n.node_name)?;
                d.set_item("node_id", n.node_id)?;
                d.set_item("host", &n.host)?;
                Ok(d)
            })
            .collect()
    }

    /// The daemons' chunk size in bytes.
    #[getter]
    fn chunk_size(&self) -> u64 {
        self.client.chunk_size()
    }

    /// Whether the sessions are open.
    #[getter]
    fn connected(&self) -> bool {
        self.client.is_connected()
    }

    /// Create ``path`` (empty) and open it; return its handle.
    #[pyo3(signature = (path, mode = 0o644, exclusive = false))]
    fn create(&mut self, py: Python<'_>, path: &str, mode: u32, exclusive: bool) -> PyResult<u64> {
        self.run(py, |c| c.create(path, mode, exclusive))
    }

    /// Open ``path`` with ``os.O_*`` flags; return its handle.
    // 2 is O_RDWR (a literal, so that the signature shows it).
    #[pyo3(signature = (path, flags = 2, mode = 0o644))]
    fn open(&mut self, py: Python<'_>, path: &str, flags: i32, mode: u32) -> PyResult<u64> {
        self.run(py, |c| c.open(path, flags, mode))
    }

    /// Write ``data`` at ``offset``; return the bytes written.
    fn write(
        &mut self,
        py: Python<'_>,
        handle: u64,
        offset: &Bound<'_, PyAny>,
        data: &Bound<'_, PyAny>,
    ) -> PyResult<u64> {
        let offset = int_arg(offset, "offset", crate::storage::store::MAX_OFFSET)?;
        let view = PyUntypedBuffer::get(data)?;
        if !view.is_c_contiguous() {
            return Err(PyValueError::new_err("data must be a C-contiguous buffer"));
        }
        let len = view.len_bytes();
        let bytes: &[u8] = if len == 0 {
            &[]
        } else {
            // Safety: `view` holds a buffer export of `data` until the end
            // of this function, so the exporter keeps the `len` bytes at
            // `buf_ptr` alive and unresized; the bytes are copied before
            // the client sends them.
            unsafe { std::slice::from_raw_parts(view.buf_ptr().cast::<u8>(), len) }
        };
        let n = self.run(py, |c| c.write(handle, offset, bytes))?;
        drop(view);
        Ok(n)
    }

    /// Read up to ``length`` bytes at ``offset``; shorter at end of file.
    fn read<'py>(
        &mut self,
        py: Python<'py>,
        handle: u64,
        offset: &Bound<'py, PyAny>,
        length: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let offset = int_arg(offset, "offset", crate::storage::store::MAX_OFFSET)?;
        let length = int_arg(length, "length", 1 << 30)?;
        let data = self.run(py, |c| {
            c.read(
                handle,
                offset,
                usize::try_from(length).unwrap_or(usize::MAX),
            )
        })?;
        Ok(PyBytes::new(py, &data))
    }

    /// Make the file durable on every daemon.
    fn fsync(&mut self, py: Python<'_>, handle: u64) -> PyResult<()> {
        self.run(py, |c| c.fsync(handle))
    }

    /// Close the handle (fsync first when the daemons' durability is
    /// ``fsync_on_close``).
    fn close(&mut self, py: Python<'_>, handle: u64) -> PyResult<()> {
        self.run(py, |c| c.close(handle))
    }

    /// Size (the largest over the daemons), mtime and mode of ``path``.
    fn stat<'py>(&mut self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyDict>> {
        let a = self.run(py, |c| c.stat(path))?;
        attr_dict(py, &a)
    }

    /// Remove ``path`` from every daemon.
    fn unlink(&mut self, py: Python<'_>, path: &str) -> PyResult<()> {
        self.run(py, |c| c.unlink(path))
    }

    /// Entries directly under ``path`` ("" = the root), sorted by name.
    #[pyo3(signature = (path = ""))]
    fn readdir<'py>(&mut self, py: Python<'py>, path: &str) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let entries = self.run(py, |c| c.readdir(path))?;
        entries
            .iter()
            .map(|e| {
                let d = PyDict::new(py);
                d.set_item("name", &e.name)?;
                d.set_item("mode", e.mode)?;
                d.set_item("size", e.size)?;
                Ok(d)
            })
            .collect()
    }

    /// Set the size of ``path`` (which must exist).
    fn truncate(&mut self, py: Python<'_>, path: &str, size: &Bound<'_, PyAny>) -> PyResult<()> {
        let size = int_arg(size, "size", crate::storage::store::MAX_OFFSET)?;
        self.run(py, |c| c.truncate(path, size))
    }

    /// Round-trip time of a ping to ``node_id``, in seconds.
    fn ping(&mut self, py: Python<'_>, node_id: u32) -> PyResult<f64> {
        Ok(self.run(py, |c| c.ping(node_id))?.as_secs_f64())
    }

    /// Pings with a payload (the RPC layer without storage): a round trip
    /// per ping with `echo`, one-way bandwidth with a `window` of them.
    #[pyo3(signature = (node_id, size, iterations, *, warmup = 1000, echo = true, window = 1))]
    #[allow(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn bench_ping<'py>(
        &mut self,
        py: Python<'py>,
        node_id: u32,
        size: usize,
        iterations: u64,
        warmup: u64,
        echo: bool,
        window: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        let r = self.run(py, |c| {
            c.bench_ping(node_id, size, iterations, warmup, echo, window)
        })?;
        let d = PyDict::new(py);
        d.set_item("size", r.size)?;
        d.set_item("iterations", r.iterations)?;
        d.set_item("window", r.window)?;
        d.set_item("echo", r.echo)?;
        d.set_item("elapsed_s", r.elapsed.as_secs_f64())?;
        d.set_item("MiBps", r.mib_per_s())?;
        let us = |ns: u64| ns as f64 / 1e3;
        d.set_item("p50_us", us(r.latency.p50_ns))?;
        d.set_item("p99_us", us(r.latency.p99_ns))?;
        d.set_item("mean_us", r.latency.mean_ns / 1e3)?;
        d.set_item("max_us", us(r.latency.max_ns))?;
        Ok(d)
    }

    /// The daemon's statistics (docs/RPC.md).
    fn stats<'py>(&mut self, py: Python<'py>, node_id: u32) -> PyResult<Bound<'py, PyAny>> {
        let json = self.run(py, |c| c.stats(node_id))?;
        py.import("json")?.call_method1("loads", (json,))
    }

    /// Stop every daemon (``force``: without draining) and disconnect.
    #[pyo3(signature = (force = false))]
    fn shutdown_daemons(&mut self, py: Python<'_>, force: bool) -> PyResult<()> {
        self.run(py, |c| c.shutdown_daemons(force))
    }

    /// RPC counters: rpcs, failed, retries, timeouts, late_replies,
    /// bad_replies.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.client.counters();
        let d = PyDict::new(py);
        for (k, v) in [
            ("rpcs", c.rpcs),
            ("failed", c.failed),
            ("retries", c.retries),
            ("timeouts", c.timeouts),
            ("late_replies", c.late_replies),
            ("bad_replies", c.bad_replies),
        ] {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// One rank's IOR-style phase, run entirely in the engine.
    #[pyo3(signature = (
        *,
        phase,
        file_name,
        transfer_size,
        block_size,
        segments = 1,
        rank = 0,
        ranks = 1,
        file_per_process = true,
        read_rank_shift = 0,
        verify = false,
        seed = 0,
        stonewall_s = 0.0,
        first_op = 0,
        max_ops = 0,
        fsync = false,
        max_errors = 0,
        progress_path = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn run_phase<'py>(
        &mut self,
        py: Python<'py>,
        phase: &str,
        file_name: String,
        transfer_size: &Bound<'py, PyAny>,
        block_size: &Bound<'py, PyAny>,
        segments: u64,
        rank: u32,
        ranks: u32,
        file_per_process: bool,
        read_rank_shift: u32,
        verify: bool,
        seed: u64,
        stonewall_s: f64,
        first_op: u64,
        max_ops: u64,
        fsync: bool,
        max_errors: u64,
        progress_path: Option<PathBuf>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let write = match phase {
            "write" => true,
            "read" => false,
            other => {
                return Err(PyValueError::new_err(format!(
                    "phase must be 'write' or 'read', got {other:?}"
                )));
            }
        };
        if !(stonewall_s >= 0.0 && stonewall_s.is_finite()) {
            return Err(PyValueError::new_err(format!(
                "stonewall_s must be 0 (off) or positive, got {stonewall_s}"
            )));
        }
        let spec = PhaseSpec {
            write,
            file_name,
            rank,
            ranks,
            transfer_size: int_arg(transfer_size, "transfer_size", 1 << 30)?,
            block_size: int_arg(block_size, "block_size", 1 << 50)?,
            segments,
            file_per_process,
            read_rank_shift,
            verify,
            seed,
            stonewall: (stonewall_s > 0.0).then(|| std::time::Duration::from_secs_f64(stonewall_s)),
            first_op,
            max_ops,
            fsync,
            max_errors,
            progress_path,
        };
        let r = self.run(py, |c| c.run_phase(&spec))?;
        phase_dict(py, phase, &r)
    }

    /// End the sessions (idempotent; later calls raise ``OSError``).
    fn disconnect(&mut self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |c| {
            c.disconnect();
            Ok(())
        })
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*exc))]
    fn __exit__(&mut self, py: Python<'_>, exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
        let _ = exc;
        self.disconnect(py)
    }

    fn __repr__(&self) -> String {
        format!(
            "Client({} nodes, chunk_size={}{})",
            self.client.nodes().len(),
            self.client.chunk_size(),
            if self.client.is_connected() {
                ""
            } else {
                ", disconnected"
            }
        )
    }
}

/// The node that holds chunk ``chunk`` of ``path`` among ``nodes`` daemons.
#[pyfunction]
fn placement_owner(path: &str, chunk: u64, nodes: i64) -> PyResult<u32> {
    Ok(Placement::new(node_count(nodes)?)?.chunk_owner(path, chunk))
}

/// The node that holds the metadata of ``path`` among ``nodes`` daemons.
#[pyfunction]
fn metadata_owner(path: &str, nodes: i64) -> PyResult<u32> {
    Ok(Placement::new(node_count(nodes)?)?.metadata_owner(path))
}

/// Chunks per node of ``files`` (``(path, chunk count)`` pairs).
#[pyfunction]
fn chunk_loads(py: Python<'_>, files: Vec<(String, u64)>, nodes: i64) -> PyResult<Vec<u64>> {
    let p = Placement::new(node_count(nodes)?)?;
    Ok(py.detach(|| p.chunk_loads(files.iter().map(|(f, n)| (f.as_str(), *n)))))
}

/// The client's TypedDicts, defined for real like the others.
const CLIENT_TYPED_DICTS: &std::ffi::CStr = c"
from typing import TypedDict

class NodeInfo(TypedDict):
    node_name: str
    node_id: int
    host: str

class FileAttr(TypedDict):
    size: int
    mtime_unix_ns: int
    mode: int

class DirEntry(TypedDict):
    name: str
    mode: int
    size: int

class ClientCounters(TypedDict):
    rpcs: int
    failed: int
    retries: int
    timeouts: int
    late_replies: int
    bad_replies: int

class PhaseResult(TypedDict):
    phase: str
    path: str
    bytes: int
    ops: int
    ops_reached: int
    total_ops: int
    start_unix_ns: int
    end_unix_ns: int
    elapsed_s: float
    open_s: float
    io_s: float
    close_s: float
    latency_ns: bytes
    min_ns: int
    mean_ns: float
    p50_ns: int
    p90_ns: int
    p99_ns: int
    p999_ns: int
    max_ns: int
    errors: int
    verify_errors: int
    first_bad_offset: int | None
    stonewalled: bool
    rpcs: int
    retries: int

class PingBenchResult(TypedDict):
    size: int
    iterations: int
    window: int
    echo: bool
    elapsed_s: float
    MiBps: float
    p50_us: float
    p99_us: float
    mean_us: float
    max_us: float
";

const CLIENT_TYPED_DICT_NAMES: [&str; 6] = [
    "NodeInfo",
    "FileAttr",
    "DirEntry",
    "ClientCounters",
    "PhaseResult",
    "PingBenchResult",
];

/// Adds the client, the placement functions and their TypedDicts.
fn add_client_api(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyClient>()?;
    m.add_function(wrap_pyfunction!(placement_owner, m)?)?;
    m.add_function(wrap_pyfunction!(metadata_owner, m)?)?;
    m.add_function(wrap_pyfunction!(chunk_loads, m)?)?;
    let ns = PyDict::new(py);
    ns.set_item("__name__", "benchfs_native")?;
    py.run(CLIENT_TYPED_DICTS, Some(&ns), None)?;
    for name in CLIENT_TYPED_DICT_NAMES {
        if let Some(v) = ns.get_item(name)? {
            m.add(name, v)?;
        }
    }
    Ok(())
}

// ------------------------------------------------------------ daemon

/// Run one daemon until SIGTERM/SIGINT or a shutdown request.
///
/// Opens the chunk store in ``data_dir`` (created if missing), creates
/// the UCX worker, registers in ``registry_dir``, serves, then drains
/// (at most ``shutdown_deadline_s``), fsyncs when ``durability`` asks,
/// unregisters and closes the store. Blocks with the GIL released; SIGTERM
/// and SIGINT are handled natively meanwhile (the previous handlers are
/// restored on return). Returns the daemon's summary.
#[pyfunction]
#[pyo3(signature = (
    *,
    node_name,
    node_id,
    daemon_index,
    data_dir,
    registry_dir,
    chunk_size,
    buffer_pool_size,
    durability,
    transport,
    max_concurrency,
    trace_dir,
    shutdown_deadline_s,
    buffered = false,
))]
#[allow(clippy::too_many_arguments)]
fn serve_daemon<'py>(
    py: Python<'py>,
    node_name: String,
    node_id: i64,
    daemon_index: i64,
    data_dir: PathBuf,
    registry_dir: PathBuf,
    chunk_size: i64,
    buffer_pool_size: i64,
    durability: &str,
    transport: &str,
    max_concurrency: i64,
    trace_dir: Option<PathBuf>,
    shutdown_deadline_s: f64,
    buffered: bool,
) -> PyResult<Bound<'py, PyAny>> {
    use crate::daemon::{DaemonConfig, serve};
    let u32_arg = |v: i64, name: &str| {
        u32::try_from(v).map_err(|_| {
            PyValueError::new_err(format!(
                "{name} must be between 0 and {}, got {v}",
                u32::MAX
            ))
        })
    };
    let deadline = std::time::Duration::try_from_secs_f64(shutdown_deadline_s).map_err(|_| {
        PyValueError::new_err(format!(
            "shutdown_deadline_s must be a non-negative number of seconds, got {shutdown_deadline_s}"
        ))
    })?;
    let mut cfg = DaemonConfig::new(
        node_name,
        u32_arg(node_id, "node_id")?,
        data_dir,
        registry_dir,
    );
    cfg.daemon_index = u32_arg(daemon_index, "daemon_index")?;
    cfg.chunk_size = positive(chunk_size, "chunk_size")?;
    cfg.buffer_pool_size = positive(buffer_pool_size, "buffer_pool_size")?;
    cfg.durability = durability.parse()?;
    cfg.transport = transport.parse()?;
    cfg.max_concurrency =
        usize::try_from(positive(max_concurrency, "max_concurrency")?).unwrap_or(usize::MAX);
    cfg.trace_dir = trace_dir.filter(|d| !d.as_os_str().is_empty());
    cfg.shutdown_deadline = deadline;
    cfg.handle_signals = true;
    cfg.buffered = buffered;
    // The UCX worker is created inside `serve`, on this thread, with the
    // GIL released: nothing `!Send` crosses the closure.
    let summary = py.detach(|| serve(&cfg))?;
    let json = serde_json::to_string(&summary)
        .map_err(|e| PyRuntimeError::new_err(format!("daemon summary: {e}")))?;
    py.import("json")?.call_method1("loads", (json,))
}

const DAEMON_TYPED_DICTS: &std::ffi::CStr = c"
from typing import TypedDict

class DaemonSummary(TypedDict):
    node_name: str
    node_id: int
    registered_after_s: float
    uptime_s: float
    stop_reason: str
    drained: bool
    forced: bool
    requests: dict[str, int]
    errors: dict[str, int]
    requests_total: int
    errors_total: int
    bytes_written: int
    bytes_read: int
    decode_errors: int
    rejected: dict[str, int]
    queue_peak: int
    in_flight_peak: int
    channels_opened: int
    connects_refused: int
    refused_stopping: int
    fsynced_files: int
    buffer_grows: int
    trace_path: str | None
";

fn add_daemon_api(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(serve_daemon, m)?)?;
    let ns = PyDict::new(py);
    ns.set_item("__name__", "benchfs_native")?;
    py.run(DAEMON_TYPED_DICTS, Some(&ns), None)?;
    if let Some(v) = ns.get_item("DaemonSummary")? {
        m.add("DaemonSummary", v)?;
    }
    Ok(())
}

/// The TypedDicts of the stub, defined for real so that
/// `from benchfs_native import StorageBenchResult` works at run time.
const TYPED_DICTS: &std::ffi::CStr = c"
from typing import TypedDict

class BuildInfo(TypedDict):
    version: str
    profile: str
    git_revision: str
    rustc: str

class FileStat(TypedDict):
    path: str
    size: int

class StoreStats(TypedDict):
    submits: int
    sqes: int
    completed_ops: int
    in_flight: int
    pool_buffers: int
    pool_free: int
    pool_waits: int
    direct_ops: int
    buffered_ops: int
    fd_cache_hits: int
    fd_cache_misses: int

class LatencyStats(TypedDict):
    count: int
    mean_ns: float
    p50_ns: int
    p90_ns: int
    p99_ns: int
    p999_ns: int
    max_ns: int

StorageBenchResult = TypedDict('StorageBenchResult', {
    'pattern': str,
    'block_size': int,
    'queue_depth': int,
    'files': int,
    'bytes': int,
    'ops': int,
    'seconds': float,
    'MiBps': float,
    'iops': float,
    'latency': LatencyStats,
    'io_depth_mean': float,
    'direct': bool,
})
";

const TYPED_DICT_NAMES: [&str; 6] = [
    "BuildInfo",
    "FileStat",
    "StoreStats",
    "LatencyStats",
    "StorageBenchResult",
    "TypedDict",
];

/// The BenchFS engine: an io_uring chunk store on node-local disks.
#[pymodule]
fn benchfs_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<PyChunkStore>()?;
    m.add_function(wrap_pyfunction!(build_info, m)?)?;
    m.add_function(wrap_pyfunction!(bench_storage, m)?)?;
    add_client_api(m)?;
    add_daemon_api(m)?;
    registry::add_registry_api(m)?;
    let ns = PyDict::new(py);
    ns.set_item("__name__", "benchfs_native")?;
    py.run(TYPED_DICTS, Some(&ns), None)?;
    for name in &TYPED_DICT_NAMES[..5] {
        if let Some(v) = ns.get_item(name)? {
            m.add(*name, v)?;
        }
    }
    Ok(())
}
