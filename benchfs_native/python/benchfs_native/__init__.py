"""The BenchFS engine: an io_uring chunk store on node-local disks.

Every I/O call releases the GIL. Errors from the kernel arrive as ``OSError``
(or its errno-specific subclasses such as ``FileNotFoundError``) with the
original ``errno``; bad arguments raise ``ValueError`` naming the argument.

The classes and functions come from the compiled module
``benchfs_native._native`` (the Rust crate's ``src/python/``); the dicts
they return are the TypedDicts of ``benchfs_native._types``.
"""

from benchfs_native._native import (
    LIMITS,
    ChunkStore,
    Client,
    __version__,
    bench_storage,
    build_info,
    chunk_loads,
    ensure_session_key,
    find_posix_level,
    metadata_owner,
    placement_owner,
    read_registry,
    run_posix_metadata_phase,
    run_posix_phase,
    serve_daemon,
    serve_mount,
    write_members,
)
from benchfs_native._types import (
    BuildInfo,
    ClientCounters,
    DaemonSummary,
    DirEntry,
    FileAttr,
    FileStat,
    FsStat,
    LatencyStats,
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
    "BuildInfo",
    "ChunkStore",
    "Client",
    "ClientCounters",
    "DaemonSummary",
    "DirEntry",
    "FileAttr",
    "FileStat",
    "FsStat",
    "LatencyStats",
    "MetadataPhaseResult",
    "NodeInfo",
    "PhaseResult",
    "PingBenchResult",
    "RegistryRecord",
    "StorageBenchResult",
    "StoreStats",
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
