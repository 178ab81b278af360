"""Stub of the compiled module ``benchfs_native._native`` (src/python/).

The package ``benchfs_native`` re-exports everything here; the dicts the
functions return are the TypedDicts of ``benchfs_native._types``.
"""

from typing import Any, Literal, final

from typing_extensions import Buffer

from benchfs_native._types import (
    BuildInfo,
    ClientCounters,
    DaemonSummary,
    DirEntry,
    FileAttr,
    FileStat,
    FsStat,
    MetadataPhaseResult,
    NodeInfo,
    PhaseResult,
    PingBenchResult,
    RegistryRecord,
    StorageBenchResult,
    StoreStats,
)

__all__ = [
    "LIMITS",
    "ChunkStore",
    "Client",
    "__version__",
    "bench_storage",
    "build_info",
    "chunk_loads",
    "ensure_session_key",
    "find_posix_level",
    "metadata_owner",
    "placement_owner",
    "read_registry",
    "run_posix_metadata_phase",
    "run_posix_phase",
    "serve_daemon",
    "serve_mount",
    "write_members",
]

__version__: str
# The engine's bounds by name (bytes, counts or microseconds, as the name says):
# max_chunk, max_pool_bytes, max_io, max_read, max_concurrency, max_bulk_spin_us,
# max_mount_threads, max_mount_session_spin_us, max_name, max_path, max_node_name.
LIMITS: dict[str, int]

def build_info() -> BuildInfo:
    """Version, cargo profile and git revision the extension was built from,
    and the UCX library it runs with."""

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

@final
class Client:
    """A client of the BenchFS daemons of one registry.

    The constructor waits until ``expected_nodes`` daemons (a count, or
    their node names) have registered in ``registry_dir`` (a partial
    membership only with ``allow_partial``), then opens a session with each;
    both within ``connect_deadline_s``, else ``OSError(ETIMEDOUT)`` naming
    the missing daemons. ``transport`` must match the daemons'.

    Every call releases the GIL and drives the client's own UCX worker on
    the calling thread: use a client only from the thread that created it.
    At most ``max_in_flight`` RPCs are outstanding; each has
    ``rpc_deadline_s``. A failed RPC raises ``OSError(errno, "<op> on node
    <name> failed: <cause>", <node name>)``, e.g. ``write testfile.3 chunk
    12 on node node2 failed: no reply within 2.0 s``. Reads, stats, opens,
    readdirs, pings and stats are repeated up to ``retries`` times on
    ``EAGAIN``, ``EBUSY`` and on ``ETIMEDOUT`` while the daemon is still
    reachable. With ``trace_dir``, every RPC is recorded as an
    ``rpc_client`` event in ``trace-<name>-<pid>.bftrace``.
    ``fsync_on_close=None`` asks the daemons whether to fsync on close.
    """

    def __new__(
        cls,
        registry_dir: str,
        expected_nodes: int | list[str],
        *,
        transport: Literal["auto", "shm", "tcp"] = "auto",
        connect_deadline_s: float = 60.0,
        rpc_deadline_s: float = 30.0,
        max_in_flight: int = 16,
        retries: int = 3,
        allow_partial: bool = False,
        name: str = "client",
        trace_dir: str | None = None,
        fsync_on_close: bool | None = None,
    ) -> Client: ...
    @property
    def nodes(self) -> list[NodeInfo]:
        """The daemons, by node id."""

    @property
    def chunk_size(self) -> int:
        """The daemons' chunk size in bytes."""

    @property
    def connected(self) -> bool:
        """Whether the sessions are open."""

    def create(self, path: str, mode: int = 0o644, exclusive: bool = False) -> int:
        """Create ``path`` (empty) and open it; return its handle."""

    def open(self, path: str, flags: int = 2, mode: int = 0o644) -> int:
        """Open ``path`` with ``os.O_*`` flags (default ``os.O_RDWR``); return its handle."""

    def write(self, handle: int, offset: int, data: Buffer) -> int:
        """Write ``data`` at ``offset``; return the bytes written."""

    def read(self, handle: int, offset: int, length: int) -> bytes:
        """Read up to ``length`` bytes at ``offset``; shorter at end of file."""

    def fsync(self, handle: int) -> None:
        """Make the file durable on every daemon."""

    def close(self, handle: int) -> None:
        """Close the handle (fsync first when the daemons' durability is ``fsync_on_close``)."""

    def stat(self, path: str = "") -> FileAttr:
        """Attributes of ``path`` ("" = the root): ino, kind, size (the largest
        over the daemons), blocks, mode, uid, gid, nlink and the three times."""

    def unlink(self, path: str) -> None:
        """Remove file or symbolic link ``path``: its record, then a file's
        data on every daemon (with its last name, when it has several)."""

    def set_creator(self, uid: int, gid: int) -> None:
        """Owner (uid, gid) of the files and directories created from now on."""

    def mkdir(self, path: str, mode: int = 0o755, *, parents: bool = False) -> FileAttr:
        """Create directory ``path``; return its attributes."""

    def rmdir(self, path: str) -> None:
        """Remove the empty directory ``path``."""

    def rename(self, src: str, dst: str) -> None:
        """Rename file or symbolic link ``src`` to ``dst`` (replacing a file
        or link there)."""

    def link(self, src: str, dst: str) -> FileAttr:
        """Give file or symbolic link ``src`` the second name ``dst`` (a hard
        link: both names share the data, which goes with the last name);
        return the attributes of ``dst`` (``nlink`` counted)."""

    def symlink(self, target: str, path: str) -> FileAttr:
        """Create the symbolic link ``path`` to ``target`` (kept as given,
        never resolved); return its attributes (kind ``"symlink"``, size
        the target's length)."""

    def readlink(self, path: str) -> str:
        """The target of symbolic link ``path`` (``OSError`` ``EINVAL`` if it
        is not a link)."""

    def setattr(
        self,
        path: str,
        *,
        mode: int | None = None,
        uid: int | None = None,
        gid: int | None = None,
        size: int | None = None,
        atime_ns: int | None = None,
        mtime_ns: int | None = None,
    ) -> FileAttr:
        """Change attributes of ``path``; return the new ones."""

    def statfs(self) -> FsStat:
        """The cluster's totals (statvfs of every daemon's data directory,
        namespace records)."""

    def readdir(self, path: str = "") -> list[DirEntry]:
        """Entries directly under directory ``path`` ("" = the root), sorted by name,
        with their kind (``"file"``/``"dir"``/``"symlink"``, or
        ``"fifo"``/``"socket"``/``"blockdev"``/``"chardev"`` made through
        the mount) and id;
        ``NotADirectoryError`` for a file."""

    def truncate(self, path: str, size: int) -> None:
        """Set the size of file ``path`` (which must exist)."""

    def ping(self, node_id: int) -> float:
        """Round-trip time of a ping to ``node_id``, in seconds."""

    def bench_ping(
        self,
        node_id: int,
        size: int,
        iterations: int,
        *,
        warmup: int = 1000,
        echo: bool = True,
        window: int = 1,
    ) -> PingBenchResult:
        """Pings carrying ``size`` payload bytes (no storage on the daemon).

        With ``echo`` and ``window=1``: round trips (``p50_us``, ``p99_us``);
        without echo and a window of several: one-way bandwidth (``MiBps``).
        """

    def stats(self, node_id: int) -> dict[str, Any]:
        """The daemon's statistics (docs/RPC.md)."""

    def shutdown_daemons(self, force: bool = False) -> None:
        """Stop every daemon (``force``: without draining) and disconnect."""

    def counters(self) -> ClientCounters:
        """RPC counters of this client."""

    def run_phase(
        self,
        *,
        phase: Literal["write", "read"],
        file_name: str,
        transfer_size: int,
        block_size: int,
        segments: int = 1,
        rank: int = 0,
        ranks: int = 1,
        file_per_process: bool = True,
        read_rank_shift: int = 0,
        verify: bool = False,
        seed: int = 0,
        stonewall_s: float = 0.0,
        first_op: int = 0,
        max_ops: int = 0,
        fsync: bool = False,
        max_errors: int = 0,
        progress_path: str | None = None,
    ) -> PhaseResult:
        """One rank's IOR-style phase, run entirely in the engine.

        File per process: ``f"{file_name}.{rank:08}"``; shared: ``file_name``
        with IOR's segmented layout. A read reads what rank ``(rank +
        read_rank_shift) % ranks`` wrote; ``verify`` checks it against the
        pattern the writer stamped (offset and rank every 4 KiB, ``seed``).
        ``stonewall_s`` stops issuing after that many seconds;
        ``first_op``/``max_ops`` run transfers ``first_op..max_ops`` (IOR's
        wear-out). ``progress_path`` gets ``(bytes, transfers)`` as two
        little-endian u64 about every 200 ms. ``latency_ns`` is the
        per-transfer latency as little-endian u64 (``numpy.frombuffer(...,
        "<u8")``).
        """

    def run_metadata_phase(
        self,
        *,
        phase: Literal["create", "stat", "read", "rename", "remove"],
        prefix: str,
        items: int,
        kind: Literal["file", "dir", "tree"] = "file",
        rank: int = 0,
        ranks: int = 1,
        first_item: int = 0,
        unique_dir: bool = True,
        write_bytes: int = 0,
        read_bytes: int = 0,
        stonewall_s: float = 0.0,
        verify: bool = False,
        seed: int = 0,
        progress_path: str | None = None,
        tree_depth: int = 0,
        branch_factor: int = 1,
        items_per_dir: int = 0,
    ) -> MetadataPhaseResult:
        """One rank's mdtest-style metadata phase, run entirely in the engine.

        Items ``first_item..items`` one after the other, each on the file
        ``f"{prefix}/tree.{rank}/file.mdtest.{rank}.{i}"`` (``unique_dir``,
        mdtest ``-u``) or ``f"{prefix}/tree.shared/file.mdtest.{rank}.{i}"``:
        ``create`` creates it (exclusive), writes ``write_bytes`` and closes
        it; ``stat`` stats it; ``read`` opens it, reads ``read_bytes`` and
        closes it; ``remove`` unlinks it. With ``kind="dir"`` the items
        are directories ``.../dir.mdtest.{rank}.{i}``: ``create`` is mkdir,
        ``stat`` stats it, ``remove`` is rmdir, and ``read`` is refused
        (mdtest's directory read does nothing); ``rename`` is mdtest's chain
        (``-U``: each directory onto the previous one's name, the first
        parked as ``...-XX`` and moved last), which BenchFS refuses (EXDEV).
        With ``tree_depth`` and ``branch_factor`` (mdtest ``-z``, ``-b``)
        item ``i`` is in the tree's directory ``i // items_per_dir``
        (``.../tree.{rank}.{a}/.../tree.{rank}.{d}``, numbered as mdtest:
        the children of ``d`` are ``b*d+1..b*d+b``); with ``kind="tree"``
        the items are those directories, ``create`` making them top down
        and the prefix first, ``remove`` taking them bottom up. The create
        phase of files or directories makes the rank's directory first.
        ``stonewall_s`` (create only) stops starting items after that many
        seconds; ``items_reached`` says where a wear-out call
        (``first_item``) goes on. The first
        failed item raises. Each file's bytes are its item's part of the
        rank's data pattern (``seed``); ``read`` with ``verify`` (mdtest
        ``-X``) counts the items whose bytes are short or not their own in
        ``verify_errors`` (the first in ``first_bad_item``) and goes on.
        ``progress_path`` gets ``(bytes, items)`` as two little-endian u64
        about every 200 ms; ``latency_ns`` is the per-item latency as
        little-endian u64.
        """

    def disconnect(self) -> None:
        """End the sessions (idempotent; later calls raise ``OSError``)."""

    def __enter__(self) -> Client: ...
    def __exit__(self, *exc: object) -> None: ...

def run_posix_phase(
    *,
    directory: str,
    phase: Literal["write", "read"],
    file_name: str,
    transfer_size: int,
    block_size: int,
    segments: int = 1,
    rank: int = 0,
    ranks: int = 1,
    file_per_process: bool = True,
    read_rank_shift: int = 0,
    verify: bool = False,
    seed: int = 0,
    stonewall_s: float = 0.0,
    first_op: int = 0,
    max_ops: int = 0,
    fsync: bool = False,
    max_errors: int = 0,
    progress_path: str | None = None,
    direct: bool = False,
) -> PhaseResult:
    """``Client.run_phase`` on any mounted file system: the files under
    ``directory`` with plain pwrite/pread, one transfer at a time (IOR's
    POSIX backend), ``O_DIRECT`` with ``direct``. Same layout, pattern,
    stonewall, wear-out, progress record and result; ``path`` is relative
    to ``directory``, ``rpcs`` and ``retries`` are 0.
    """

def find_posix_level(
    *,
    directory: str,
    directories: list[str],
    name: str,
    size: int,
    newer_than_ns: int,
) -> tuple[list[str], int, int]:
    """IO500's find over ``directories`` (relative to ``directory``), as
    pfind scans: each directory listed once, an entry's type from the
    listing, every name matched with pfind's reading of ``-name`` (``*`` as
    ``.*``, ``.`` as itself, a POSIX basic expression found anywhere in the
    name, the C library's ``regexec`` in the "C" locale), only a match
    ``lstat``'ed. Returns the directories below (relative paths, to scan
    next), the other entries scanned, and the matching files of ``size``
    bytes modified after ``newer_than_ns``. A directory that cannot be
    listed raises ``OSError`` naming it; a pattern that does not compile
    raises ``ValueError`` naming it.
    """

def run_posix_metadata_phase(
    *,
    directory: str,
    phase: Literal["create", "stat", "read", "rename", "remove"],
    prefix: str,
    items: int,
    kind: Literal["file", "dir", "tree"] = "file",
    rank: int = 0,
    ranks: int = 1,
    first_item: int = 0,
    unique_dir: bool = True,
    write_bytes: int = 0,
    read_bytes: int = 0,
    stonewall_s: float = 0.0,
    verify: bool = False,
    seed: int = 0,
    progress_path: str | None = None,
    tree_depth: int = 0,
    branch_factor: int = 1,
    items_per_dir: int = 0,
) -> MetadataPhaseResult:
    """``Client.run_metadata_phase`` on any mounted file system: the items
    under ``directory`` with plain POSIX calls (open with ``O_CREAT|O_EXCL``,
    write, close; statx; open, read, close; unlink; for ``kind="dir"``
    mkdir (mode 0700), statx, rename, rmdir; for ``kind="tree"`` mkdir and
    rmdir), the create phase making the rank's directory (mode 0700) first,
    the tree's creation the prefix. Same items, data, verification, stonewall,
    wear-out, progress record and result; ``dir`` is relative to ``directory``,
    ``rpcs`` and ``retries`` are 0. A failed item raises ``OSError`` naming
    its path.
    """

def placement_owner(path: str, chunk: int, nodes: int) -> int:
    """The node that holds chunk ``chunk`` of ``path`` among ``nodes`` daemons."""

def metadata_owner(path: str, nodes: int) -> int:
    """The node that holds the metadata of ``path`` among ``nodes`` daemons."""

def chunk_loads(files: list[tuple[str, int]], nodes: int) -> list[int]:
    """Chunks per node of ``files`` (``(path, chunk count)`` pairs)."""

def serve_daemon(
    *,
    node_name: str,
    node_id: int,
    daemon_index: int,
    data_dir: str,
    registry_dir: str,
    chunk_size: int,
    buffer_pool_size: int,
    durability: Literal["none", "fsync_on_close", "fsync_each_write"],
    transport: Literal["auto", "shm", "tcp"],
    max_concurrency: int,
    trace_dir: str | None,
    shutdown_deadline_s: float,
    buffered: bool = False,
    channel_stall_s: float = 60.0,
    bulk_spin_us: int = 0,
) -> DaemonSummary:
    """Run one daemon until SIGTERM/SIGINT/SIGHUP or a shutdown request.

    Opens the chunk store in ``data_dir`` (created if missing), creates
    the UCX worker, registers in ``registry_dir``, serves, then drains
    (at most ``shutdown_deadline_s``), fsyncs when ``durability`` asks,
    unregisters and closes the store. Blocks with the GIL released; SIGTERM,
    SIGINT and SIGHUP are handled natively meanwhile (the previous handlers are
    restored on return). A channel that has carried no request for
    ``channel_stall_s`` while one of its transfers has been unfinished as
    long is freed (its client is gone). After a request that moved bulk
    data, the idle event loop spins up to ``bulk_spin_us`` while no thread
    on the machine waits for a CPU (0: it sleeps after its short spin).
    Returns the daemon's summary.
    """

def serve_mount(
    registry_dir: str,
    mountpoint: str,
    *,
    read_only: bool = False,
    allow_other: bool = False,
    default_permissions: bool = True,
    threads: int = 4,
    attr_timeout_s: float = 0.0,
    entry_timeout_s: float = 0.0,
    rpc_deadline_s: float = 30.0,
    connect_deadline_s: float = 60.0,
    session_spin_us: int = 0,
) -> Literal["unmounted", "SIGINT", "SIGTERM", "SIGHUP", "signal"]:
    """Mount the daemons registered in ``registry_dir`` at ``mountpoint``
    through FUSE and serve until it is unmounted (``benchfs umount``,
    ``fusermount3 -u``) or SIGINT/SIGTERM/SIGHUP arrives (it then unmounts first).

    Blocks with the GIL released. Returns ``"unmounted"``, or the name of
    the signal that ended it (``"SIGINT"``, ``"SIGTERM"``, ``"SIGHUP"``). After serving a
    request itself, the session thread polls for the next one for up to
    ``session_spin_us`` microseconds (0..=1000) before sleeping.
    """

def ensure_session_key(registry_dir: str) -> str:
    """The job's session key for ``registry_dir``: ``$BENCHFS_SESSION_KEY``
    if set, else ``registry_dir/session.key``, created (0600, a new random
    key; the directory 0700 if new) when absent. Returns where the key is
    (the variable's name or the file's path), never the key.

    A key file that is not a regular file, belongs to another user or is
    readable by others raises ``ValueError`` naming it.
    """

def read_registry(registry_dir: str) -> list[RegistryRecord]:
    """Every daemon record in ``registry_dir``, sorted by node id.

    Temp files and other files are skipped; a record that does not parse,
    or two records claiming one node id, raise ``ValueError`` naming the
    files; a missing directory raises ``FileNotFoundError``.
    """

def write_members(registry_dir: str, node_names: list[str]) -> str:
    """Writes ``registry_dir/members.json``: the records of the daemons named
    in ``node_names`` (all registered, ids ``0..N``), signed with the job's
    session key, atomically; clients then read this one file instead of N
    records. Returns its path.

    A missing daemon, or ids that are not ``0..N``, raise ``ValueError``
    naming the registry; no session key raises ``FileNotFoundError``.
    """
