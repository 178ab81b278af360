"""The dicts the engine returns, as TypedDicts.

This module is their one definition: at run time (``from benchfs_native
import StoreStats``) and for type checkers (the stub of the compiled
module, ``_native.pyi``, imports them from here). The compiled module
builds plain dicts with exactly these keys.
"""

from typing import TypedDict


class BuildInfo(TypedDict):
    version: str
    profile: str
    git_revision: str
    rustc: str
    source_dir: str  # the engine's source directory at build time
    ucx: str  # the libucp loaded at run time, e.g. "1.13.1"


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
    ring_setup: str


class NodeInfo(TypedDict):
    node_name: str
    node_id: int
    host: str


class FileAttr(TypedDict):
    ino: int
    kind: str
    size: int
    blocks: int
    mode: int
    uid: int
    gid: int
    nlink: int
    atime_unix_ns: int
    mtime_unix_ns: int
    ctime_unix_ns: int


class DirEntry(TypedDict):
    name: str
    kind: str
    ino: int
    mode: int
    size: int


class FsStat(TypedDict):
    block_size: int
    blocks: int
    blocks_free: int
    blocks_avail: int
    files: int
    files_free: int
    name_max: int


class ClientCounters(TypedDict):
    rpcs: int
    failed: int
    retries: int
    timeouts: int
    late_replies: int
    bad_replies: int


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


class MetadataPhaseResult(TypedDict):
    phase: str
    kind: str  # "file", "dir" or "tree"
    dir: str
    ops: int
    items_reached: int
    bytes: int
    start_unix_ns: int
    end_unix_ns: int
    elapsed_s: float
    latency_ns: bytes
    min_ns: int
    mean_ns: float
    p50_ns: int
    p90_ns: int
    p99_ns: int
    p999_ns: int
    max_ns: int
    stonewalled: bool
    verify_errors: int
    first_bad_item: int | None
    rpcs: int
    retries: int


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


class RegistryRecord(TypedDict):
    """One daemon's registration (docs/RPC.md, "The registry")."""

    node_name: str
    node_id: int
    daemon_index: int
    pid: int
    host: str
    worker_address: bytes
    data_dir: str
    start_time_unix_ns: int
    protocol_version: int
