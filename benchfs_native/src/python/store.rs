//! `benchfs_native.ChunkStore`: the chunk store of one local directory.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use super::args::{int_arg, positive, positive_usize, trace_config};
use super::buffer::InputBytes;
use super::error::BoundaryResult;
use crate::storage::store::{MAX_OFFSET, MAX_READ};
use crate::storage::{ChunkStore, StoreOptions, StoreStats};

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
pub(crate) struct PyChunkStore {
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
    #[allow(clippy::too_many_arguments, reason = "Python keyword arguments")]
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
    ) -> BoundaryResult<Self> {
        let opts = StoreOptions {
            chunk_size: positive(chunk_size, "chunk_size")?,
            buffer_size: positive_usize(buffer_size, "buffer_size")?,
            pool_buffers: positive_usize(pool_buffers, "pool_buffers")?,
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
    ) -> BoundaryResult<usize> {
        let offset = int_arg(offset, "offset", MAX_OFFSET)?;
        let data = InputBytes::new(data)?;
        let bytes = data.as_bytes();
        let store = &self.store;
        Ok(py.detach(|| store.write(path, offset, bytes))?)
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
    ) -> BoundaryResult<Bound<'py, PyBytes>> {
        let offset = int_arg(offset, "offset", MAX_OFFSET)?;
        let length = int_arg(length, "length", MAX_READ as u64)?;
        let length = usize::try_from(length).unwrap_or(usize::MAX);
        let store = &self.store;
        let data = py.detach(|| store.read(path, offset, length))?;
        Ok(PyBytes::new(py, &data))
    }

    /// Make the file's data durable.
    fn fsync(&self, py: Python<'_>, path: &str) -> BoundaryResult<()> {
        let store = &self.store;
        Ok(py.detach(|| store.fsync(path))?)
    }

    /// Set the file's size (``FileNotFoundError`` if it does not exist).
    fn truncate(&self, py: Python<'_>, path: &str, size: &Bound<'_, PyAny>) -> BoundaryResult<()> {
        let size = int_arg(size, "size", MAX_OFFSET)?;
        let store = &self.store;
        Ok(py.detach(|| store.truncate(path, size))?)
    }

    /// Delete the file and all its chunks.
    fn remove(&self, py: Python<'_>, path: &str) -> BoundaryResult<()> {
        let store = &self.store;
        Ok(py.detach(|| store.remove(path))?)
    }

    /// Size of the file.
    fn stat<'py>(&self, py: Python<'py>, path: &str) -> BoundaryResult<Bound<'py, PyDict>> {
        let store = &self.store;
        let size = py.detach(|| store.stat(path))?;
        let d = PyDict::new(py);
        d.set_item("path", path)?;
        d.set_item("size", size)?;
        Ok(d)
    }

    /// Paths of the files held in the store.
    fn list(&self, py: Python<'_>) -> BoundaryResult<Vec<String>> {
        let store = &self.store;
        Ok(py.detach(|| store.list())?)
    }

    /// Counters of the ring, the buffer pool and the fd cache.
    fn stats<'py>(&self, py: Python<'py>) -> BoundaryResult<Bound<'py, PyDict>> {
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
    fn close(&self, py: Python<'_>) -> BoundaryResult<()> {
        let store = &self.store;
        Ok(py.detach(|| store.close())?)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*exc))]
    fn __exit__(&self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> BoundaryResult<()> {
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
