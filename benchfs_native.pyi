"""The BenchFS engine: an io_uring chunk store on node-local disks.

Every I/O call releases the GIL. Errors from the kernel arrive as ``OSError``
(or its errno-specific subclasses such as ``FileNotFoundError``) with the
original ``errno``; bad arguments raise ``ValueError`` naming the argument.
"""

from typing import Literal, TypedDict, final

from typing_extensions import Buffer

__all__ = [
    "BuildInfo",
    "ChunkStore",
    "FileStat",
    "LatencyStats",
    "StorageBenchResult",
    "StoreStats",
    "__version__",
    "bench_storage",
    "build_info",
]

__version__: str

class BuildInfo(TypedDict):
    version: str
    profile: str
    git_revision: str
    rustc: str

def build_info() -> BuildInfo:
    """Version, cargo profile and git revision the extension was built from."""

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

@final
class ChunkStore:
    """A chunk store rooted at a local directory.

    A file's bytes are split into ``chunk_size`` chunks; all data I/O goes
    through one io_uring ring with registered buffers from a bounded pool.
    When the pool is empty a call waits for a buffer instead of failing.
    O_DIRECT is used per request when offset, length and buffer are
    aligned, buffered I/O otherwise (or always with ``buffered=True``).
    A store belongs to the process that opened it: in a ``fork()`` child its
    methods raise ``RuntimeError``.
    """

    def __new__(
        cls,
        root: str,
        *,
        chunk_size: int = 4 * 1024 * 1024,
        buffer_size: int = 1024 * 1024,
        pool_buffers: int = 64,
        ring_entries: int = 256,
        buffered: bool = False,
        trace_dir: str | None = None,
        node: str = "local",
        node_id: int = 0,
    ) -> ChunkStore:
        """Open (creating if needed) the store at ``root``."""

    @property
    def root(self) -> str: ...
    @property
    def chunk_size(self) -> int: ...
    def write(self, path: str, offset: int, data: Buffer) -> int:
        """Write ``data`` at ``offset`` of ``path``; return the bytes written.

        The write is split per chunk; it is not synced (see ``fsync``). An
        empty ``data`` creates a missing file without extending it.
        """

    def read(self, path: str, offset: int, length: int) -> bytes:
        """Read up to ``length`` bytes at ``offset``; shorter at end of file.

        Holes read as zeros; ``length`` is at most 1 GiB.
        """

    def fsync(self, path: str) -> None:
        """Make the file's data durable."""

    def truncate(self, path: str, size: int) -> None:
        """Set the file's size (``FileNotFoundError`` if it does not exist)."""

    def remove(self, path: str) -> None:
        """Delete the file and all its chunks."""

    def stat(self, path: str) -> FileStat:
        """Size of the file."""

    def list(self) -> list[str]:
        """Paths of the files held in the store."""

    def stats(self) -> StoreStats:
        """Counters of the ring, the buffer pool and the fd cache."""

    def close(self) -> None:
        """Wait for operations in flight, flush the trace and release the ring.

        Idempotent; any later call on the store raises ``ValueError``.
        """

    def __enter__(self) -> ChunkStore: ...
    def __exit__(self, *exc: object) -> None: ...

class LatencyStats(TypedDict):
    count: int
    mean_ns: float
    p50_ns: int
    p90_ns: int
    p99_ns: int
    p999_ns: int
    max_ns: int

class StorageBenchResult(TypedDict):
    pattern: str
    block_size: int
    queue_depth: int
    files: int
    bytes: int
    ops: int
    seconds: float
    MiBps: float
    iops: float
    latency: LatencyStats
    io_depth_mean: float
    direct: bool

def bench_storage(
    root: str,
    *,
    pattern: Literal["write", "read", "randwrite", "randread"],
    block_size: int,
    queue_depth: int,
    total_bytes: int,
    files: int = 1,
    direct: bool = True,
    trace_dir: str | None = None,
    node: str = "local",
    node_id: int = 0,
) -> StorageBenchResult:
    """Run one storage pattern with the hot loop in Rust.

    ``total_bytes`` is split evenly over ``files`` files named
    ``bench.<i>`` in ``root``; reads expect the files of an earlier write.
    ``queue_depth`` operations are kept in flight. Write patterns first
    reserve each file's size (``fallocate``), as fio does. With ``trace_dir``
    the run is recorded as ``trace-<node>-<pid>.bftrace``.
    """
