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
