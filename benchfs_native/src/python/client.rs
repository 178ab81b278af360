//! `benchfs_native.Client`: a client of the daemons of one registry.
//!
//! The client's UCX objects are `!Send`; the pyclass is `unsendable`, so
//! only the thread that created it ever reaches them, and `Python::detach`
//! runs its closure on that same thread.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use super::args::{self, int_arg, seconds};
use super::buffer::InputBytes;
use super::error::{BoundaryError, BoundaryResult};
use super::json::json_loads;
use super::keywords::keyword_arguments;
use super::metadata::{MetadataArgs, metadata_dict};
use super::phase::{PhaseArgs, phase_dict, phase_spec};
use crate::rpc::client::{Client, ClientOptions, SetAttr};
use crate::rpc::transport::Transport;
use crate::rpc::wire::Attr;
use crate::storage::store::MAX_OFFSET;

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

/// A client of the BenchFS daemons of one registry.
#[pyclass(unsendable, name = "Client", module = "benchfs_native")]
pub(crate) struct PyClient {
    client: Client,
}

impl PyClient {
    /// Runs `f` on the client with the GIL released.
    fn run<T: Send>(
        &mut self,
        py: Python<'_>,
        f: impl FnOnce(&mut Client) -> crate::error::Result<T> + Send,
    ) -> BoundaryResult<T> {
        let c = OnThisThread(&mut self.client);
        Ok(py.detach(move || f(c.get()))?)
    }
}

fn attr_dict<'py>(py: Python<'py>, a: &Attr) -> BoundaryResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("ino", a.ino)?;
    d.set_item("kind", a.kind.name())?;
    // A device node's size field carries its number; it has no size.
    d.set_item("size", if a.kind.is_device() { 0 } else { a.size })?;
    d.set_item("blocks", a.blocks)?;
    d.set_item("mode", a.mode)?;
    d.set_item("uid", a.uid)?;
    d.set_item("gid", a.gid)?;
    d.set_item("nlink", a.nlink)?;
    d.set_item("atime_unix_ns", a.atime_unix_ns)?;
    d.set_item("mtime_unix_ns", a.mtime_unix_ns)?;
    d.set_item("ctime_unix_ns", a.ctime_unix_ns)?;
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
    ) -> BoundaryResult<Self> {
        let expected = args::expected_nodes(expected_nodes)?;
        let max_in_flight = usize::try_from(max_in_flight)
            .ok()
            .filter(|&n| (1..=65_536).contains(&n))
            .ok_or_else(|| {
                BoundaryError::argument(format!(
                    "max_in_flight must be between 1 and 65536, got {max_in_flight}"
                ))
            })?;
        let retries = u16::try_from(retries).map_err(|_| {
            BoundaryError::argument(format!(
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
    fn nodes<'py>(&self, py: Python<'py>) -> BoundaryResult<Vec<Bound<'py, PyDict>>> {
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
    fn create(
        &mut self,
        py: Python<'_>,
        path: &str,
        mode: u32,
        exclusive: bool,
    ) -> BoundaryResult<u64> {
        self.run(py, |c| c.create(path, mode, exclusive))
    }

    /// Open ``path`` with ``os.O_*`` flags; return its handle.
    // 2 is O_RDWR (a literal, so that the signature shows it).
    #[pyo3(signature = (path, flags = 2, mode = 0o644))]
    fn open(&mut self, py: Python<'_>, path: &str, flags: i32, mode: u32) -> BoundaryResult<u64> {
        self.run(py, |c| c.open(path, flags, mode))
    }

    /// Write ``data`` at ``offset``; return the bytes written.
    fn write(
        &mut self,
        py: Python<'_>,
        handle: u64,
        offset: &Bound<'_, PyAny>,
        data: &Bound<'_, PyAny>,
    ) -> BoundaryResult<u64> {
        let offset = int_arg(offset, "offset", MAX_OFFSET)?;
        let data = InputBytes::new(data)?;
        let bytes = data.as_bytes();
        self.run(py, |c| c.write(handle, offset, bytes))
    }

    /// Read up to ``length`` bytes at ``offset``; shorter at end of file.
    fn read<'py>(
        &mut self,
        py: Python<'py>,
        handle: u64,
        offset: &Bound<'py, PyAny>,
        length: &Bound<'py, PyAny>,
    ) -> BoundaryResult<Bound<'py, PyBytes>> {
        let offset = int_arg(offset, "offset", MAX_OFFSET)?;
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
    fn fsync(&mut self, py: Python<'_>, handle: u64) -> BoundaryResult<()> {
        self.run(py, |c| c.fsync(handle))
    }

    /// Close the handle (fsync first when the daemons' durability is
    /// ``fsync_on_close``).
    fn close(&mut self, py: Python<'_>, handle: u64) -> BoundaryResult<()> {
        self.run(py, |c| c.close(handle))
    }

    /// Attributes of ``path`` ("" = the root): ino, kind, size (the
    /// largest over the daemons), blocks, mode, uid, gid, nlink and the
    /// three times.
    #[pyo3(signature = (path = ""))]
    fn stat<'py>(&mut self, py: Python<'py>, path: &str) -> BoundaryResult<Bound<'py, PyDict>> {
        let a = self.run(py, |c| c.stat(path))?;
        attr_dict(py, &a)
    }

    /// Remove file or symbolic link ``path``: its record, then a file's
    /// data on every daemon (with its last name, when it has several).
    fn unlink(&mut self, py: Python<'_>, path: &str) -> BoundaryResult<()> {
        self.run(py, |c| c.unlink(path))
    }

    /// Owner (uid, gid) of the files and directories created from now on.
    fn set_creator(&mut self, uid: u32, gid: u32) {
        self.client.set_creator(uid, gid);
    }

    /// Create directory ``path``; return its attributes.
    #[pyo3(signature = (path, mode = 0o755, *, parents = false))]
    fn mkdir<'py>(
        &mut self,
        py: Python<'py>,
        path: &str,
        mode: u32,
        parents: bool,
    ) -> BoundaryResult<Bound<'py, PyDict>> {
        let a = self.run(py, |c| {
            if parents {
                c.mkdir_all(path, mode)?;
                c.stat(path)
            } else {
                c.mkdir(path, mode)
            }
        })?;
        attr_dict(py, &a)
    }

    /// Remove the empty directory ``path``.
    fn rmdir(&mut self, py: Python<'_>, path: &str) -> BoundaryResult<()> {
        self.run(py, |c| c.rmdir(path))
    }

    /// Rename file or symbolic link ``src`` to ``dst`` (replacing a file
    /// or link there).
    fn rename(&mut self, py: Python<'_>, src: &str, dst: &str) -> BoundaryResult<()> {
        self.run(py, |c| c.rename(src, dst))
    }

    /// Give file or symbolic link ``src`` the second name ``dst`` (a hard
    /// link: both names share the data, which goes with the last name);
    /// return the attributes of ``dst`` (``nlink`` counted).
    fn link<'py>(
        &mut self,
        py: Python<'py>,
        src: &str,
        dst: &str,
    ) -> BoundaryResult<Bound<'py, PyDict>> {
        let a = self.run(py, |c| c.link(src, dst))?;
        attr_dict(py, &a)
    }

    /// Create the symbolic link ``path`` to ``target`` (kept as given,
    /// never resolved); return its attributes (kind ``"symlink"``, size
    /// the target's length).
    fn symlink<'py>(
        &mut self,
        py: Python<'py>,
        target: &str,
        path: &str,
    ) -> BoundaryResult<Bound<'py, PyDict>> {
        let a = self.run(py, |c| c.symlink(target, path))?;
        attr_dict(py, &a)
    }

    /// The target of symbolic link ``path`` (``OSError`` ``EINVAL`` if it
    /// is not a link).
    fn readlink(&mut self, py: Python<'_>, path: &str) -> BoundaryResult<String> {
        self.run(py, |c| c.readlink(path).map(|(target, _)| target))
    }

    /// Change attributes of ``path``; return the new ones.
    #[pyo3(signature = (path, *, mode = None, uid = None, gid = None, size = None, atime_ns = None, mtime_ns = None))]
    #[allow(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn setattr<'py>(
        &mut self,
        py: Python<'py>,
        path: &str,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<&Bound<'py, PyAny>>,
        atime_ns: Option<u64>,
        mtime_ns: Option<u64>,
    ) -> BoundaryResult<Bound<'py, PyDict>> {
        let size = size.map(|s| int_arg(s, "size", MAX_OFFSET)).transpose()?;
        let set = SetAttr {
            mode,
            uid,
            gid,
            size,
            atime_unix_ns: atime_ns,
            mtime_unix_ns: mtime_ns,
        };
        let a = self.run(py, |c| c.setattr(path, &set))?;
        attr_dict(py, &a)
    }

    /// The cluster's totals (statvfs of every daemon's data directory,
    /// namespace records).
    fn statfs<'py>(&mut self, py: Python<'py>) -> BoundaryResult<Bound<'py, PyDict>> {
        let f = self.run(py, Client::statfs)?;
        let d = PyDict::new(py);
        d.set_item("block_size", f.block_size)?;
        d.set_item("blocks", f.blocks)?;
        d.set_item("blocks_free", f.blocks_free)?;
        d.set_item("blocks_avail", f.blocks_avail)?;
        d.set_item("files", f.files)?;
        d.set_item("files_free", f.files_free)?;
        d.set_item("name_max", f.name_max)?;
        Ok(d)
    }

    /// Entries directly under directory ``path`` ("" = the root), sorted
    /// by name, with their kind and id.
    #[pyo3(signature = (path = ""))]
    fn readdir<'py>(
        &mut self,
        py: Python<'py>,
        path: &str,
    ) -> BoundaryResult<Vec<Bound<'py, PyDict>>> {
        let entries = self.run(py, |c| c.readdir(path))?;
        entries
            .iter()
            .map(|e| {
                let d = PyDict::new(py);
                d.set_item("name", &e.name)?;
                d.set_item("kind", e.kind.name())?;
                d.set_item("ino", e.ino)?;
                d.set_item("mode", e.mode)?;
                d.set_item("size", if e.kind.is_device() { 0 } else { e.size })?;
                Ok(d)
            })
            .collect()
    }

    /// Set the size of file ``path`` (which must exist).
    fn truncate(
        &mut self,
        py: Python<'_>,
        path: &str,
        size: &Bound<'_, PyAny>,
    ) -> BoundaryResult<()> {
        let size = int_arg(size, "size", MAX_OFFSET)?;
        self.run(py, |c| c.truncate(path, size))
    }

    /// Round-trip time of a ping to ``node_id``, in seconds.
    fn ping(&mut self, py: Python<'_>, node_id: u32) -> BoundaryResult<f64> {
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
    ) -> BoundaryResult<Bound<'py, PyDict>> {
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
    fn stats<'py>(&mut self, py: Python<'py>, node_id: u32) -> BoundaryResult<Bound<'py, PyAny>> {
        let json = self.run(py, |c| c.stats(node_id))?;
        json_loads(py, &json)
    }

    /// Stop every daemon (``force``: without draining) and disconnect.
    #[pyo3(signature = (force = false))]
    fn shutdown_daemons(&mut self, py: Python<'_>, force: bool) -> BoundaryResult<()> {
        self.run(py, |c| c.shutdown_daemons(force))
    }

    /// RPC counters: rpcs, failed, retries, timeouts, late_replies,
    /// bad_replies.
    fn counters<'py>(&self, py: Python<'py>) -> BoundaryResult<Bound<'py, PyDict>> {
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
    #[pyo3(signature = (**arguments))]
    fn run_phase<'py>(
        &mut self,
        py: Python<'py>,
        arguments: Option<&Bound<'py, PyDict>>,
    ) -> BoundaryResult<Bound<'py, PyDict>> {
        let args: PhaseArgs<'py> = keyword_arguments(py, "run_phase", arguments)?;
        let spec = phase_spec(args)?;
        let r = self.run(py, |c| c.run_phase(&spec))?;
        phase_dict(py, &spec, &r)
    }

    /// One rank's mdtest-style metadata phase, run entirely in the engine.
    #[pyo3(signature = (**arguments))]
    fn run_metadata_phase<'py>(
        &mut self,
        py: Python<'py>,
        arguments: Option<&Bound<'py, PyDict>>,
    ) -> BoundaryResult<Bound<'py, PyDict>> {
        let args: MetadataArgs = keyword_arguments(py, "run_metadata_phase", arguments)?;
        let spec = args.spec()?;
        let r = self.run(py, |c| c.run_metadata_phase(&spec))?;
        metadata_dict(py, &spec, &r)
    }

    /// End the sessions (idempotent; later calls raise ``OSError``).
    fn disconnect(&mut self, py: Python<'_>) -> BoundaryResult<()> {
        self.run(py, |c| {
            c.disconnect();
            Ok(())
        })
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*exc))]
    fn __exit__(&mut self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> BoundaryResult<()> {
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
