"""The run configuration: every setting of one run, validated, with defaults.

One point of a sweep is a ``RunConfig``; a config file with lists of values
is a ``RunPlan`` (see ``benchfs.config.plan``). Unknown keys are errors.
docs/CONFIG.md describes every key.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from benchfs.config.metadata import MetadataConfig
from benchfs.config.sizes import parse_size
from benchfs.config.suite import EXTERNAL_TOOLS, SuiteConfig
from benchfs_native import LIMITS

# Limits the engine enforces (its own, from benchfs_native.LIMITS: the store's
# options, the daemon's buffer pool, the client's largest I/O, the mount's
# threads and spin), checked here so a bad value is refused at once, naming
# its key, rather than when a daemon or a mount starts.
SECTOR = 512
MAX_CHUNK = LIMITS["max_chunk"]
MAX_IO = LIMITS["max_io"]
MIN_POOL = 4096  # one page-aligned buffer
MAX_POOL = LIMITS["max_pool_bytes"]
MAX_BLOCK = 1 << 40
MAX_COUNT = 1 << 20  # segments, repetitions: a file stays below 2^62 bytes
# Processes on this machine or per host: far beyond a real node, well below
# what would exhaust it before anything is measured.
MAX_LOCAL_NODES = 256
MAX_DAEMONS_PER_NODE = 64
MAX_TASKS_PER_NODE = 4096
MAX_SECONDS = 7 * 24 * 3600.0  # a week: a deadline beyond is a mistake

Size = Annotated[int, BeforeValidator(parse_size), Field(gt=0)]
Seconds = Annotated[float, Field(gt=0, le=MAX_SECONDS, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1, le=MAX_COUNT)]
Durability = Literal["none", "fsync_on_close", "fsync_each_write"]
Transport = Literal["auto", "shm", "tcp"]
Phase = Literal["write", "read"]
# "builtin": BenchFS's own ranks; the others run that tool (benchfs.run.workloads).
WorkloadTool = Literal["builtin", "fio", "ior", "mdtest"]
LauncherName = Literal["auto", "local", "mpirun", "srun"]
# "native": the ranks use the engine's client; "mount": plain POSIX calls on
# BenchFS mounted through FUSE on every node (benchfs.run.mounts).
Interface = Literal["native", "mount"]
MAX_QUEUE_DEPTH = 256
MAX_MOUNT_THREADS = LIMITS["max_mount_threads"]
MAX_MOUNT_SESSION_SPIN_US = LIMITS["max_mount_session_spin_us"]
MAX_BULK_SPIN_US = LIMITS["max_bulk_spin_us"]
DEFAULT_BULK_SPIN_US = 0  # rpc::server::DEFAULT_BULK_SPIN: off
BulkSpinUs = Annotated[int, Field(ge=0, le=MAX_BULK_SPIN_US, strict=True)]
# The kernel's attribute and entry caches: beyond an hour, a mistake.
CacheSeconds = Annotated[float, Field(ge=0, le=3600.0, allow_inf_nan=False)]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


# A daemon's CPU time per session it accepts over tcp, 2.5-3.4 ms measured
# (docs/perf-log/scale.md, "Sessions per daemon"), with margin: every daemon
# accepts one session from every rank of the job, one after the other.
ACCEPT_PER_RANK_S = 0.005


class Deadlines(Section):
    register_s: Seconds = 60.0
    rpc_s: Seconds = 30.0
    phase_s: Seconds = 3600.0
    shutdown_s: Seconds = 10.0
    mount_s: Seconds = 30.0
    # Added, per node, to each start-up deadline whose work grows with the
    # number of nodes (registration, connect, mounts, the ranks' start, the
    # jobs on every host): a fixed one that holds at 16 nodes breaks at 1,024.
    per_node_s: Annotated[float, Field(ge=0, le=60.0, allow_inf_nan=False)] = 0.05

    def grown(self, base_s: float, nodes: int) -> float:
        """``base_s`` plus the per-node term for ``nodes`` nodes."""
        return base_s + self.per_node_s * max(nodes, 0)

    def connect_s(self, daemons: int, ranks: int) -> float:
        """The ranks' connect: ``register_s`` grown per daemon, plus the time
        each daemon takes to accept one session from every rank of the job."""
        return self.grown(self.register_s, daemons) + ACCEPT_PER_RANK_S * max(ranks, 0)


class ClusterConfig(Section):
    local_nodes: Annotated[int, Field(ge=1, le=MAX_LOCAL_NODES)] = 4
    daemons_per_node: Annotated[int, Field(ge=1, le=MAX_DAEMONS_PER_NODE)] = 1
    # None: this user's directory in the temporary directory ($TMPDIR/benchfs-<uid>).
    data_dir: Annotated[str, Field(min_length=1)] | None = None
    registry_dir: Annotated[str, Field(min_length=1)] | None = None
    chunk_size: Annotated[Size, Field(ge=SECTOR, le=MAX_CHUNK, multiple_of=SECTOR)] = 4 << 20
    buffer_pool_size: Annotated[Size, Field(ge=MIN_POOL, le=MAX_POOL)] = 256 << 20
    durability: Durability = "none"
    transport: Transport = "auto"
    # After bulk data, how long a daemon's idle loop spins while no thread
    # waits for a CPU (0: it sleeps after its 50 us spin).
    bulk_spin_us: BulkSpinUs = DEFAULT_BULK_SPIN_US
    deadlines: Deadlines = Deadlines()


class LauncherConfig(Section):
    name: LauncherName = "auto"
    flavour: Literal["openmpi", "mpich"] = "openmpi"
    executable: str | None = None
    mca: dict[str, str] = {}
    extra_args: list[str] = []
    # MPICH: the interface of this machine whose address Hydra gives the other
    # hosts' proxies to reach mpiexec (-iface); a Linux interface name.
    network_interface: Annotated[str, Field(pattern=r"^[^\s/]{1,15}$")] | None = None


class WorkloadConfig(Section):
    api: Literal["file-per-process", "shared"] = "file-per-process"
    file_name: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+$", max_length=200)] = "testfile"
    transfer_size: Annotated[Size, Field(le=MAX_IO)] = 1 << 20
    # The main job measures steady state: the stonewall ends each phase; the
    # block is only a ceiling no rank reaches in that time here (and bounds
    # the space used if the stonewall is switched off: 4 ranks x 8 GiB).
    block_size: Annotated[Size, Field(le=MAX_BLOCK)] = 8 << 30
    segments: Count = 1
    tasks_per_node: Annotated[int, Field(ge=1, le=MAX_TASKS_PER_NODE)] = 1
    repetitions: Count = 1
    verify: bool = False
    reorder_tasks: bool = True
    stonewall_s: Annotated[float, Field(ge=0, le=MAX_SECONDS, allow_inf_nan=False)] = 15.0
    # Transfers in flight per rank (the client's RPC window). IOR's POSIX
    # backend keeps one; deeper queues measure something IOR does not.
    queue_depth: Annotated[int, Field(ge=1, le=MAX_QUEUE_DEPTH)] = 1
    # "benchfs": the daemons and their client; "posix:PATH": no daemons, the
    # same workload with pwrite/pread on any mounted file system at PATH.
    target: Annotated[str, Field(pattern=r"^(benchfs|posix:/.*)$")] = "benchfs"
    # O_DIRECT on a posix: target (IOR -useO_DIRECT is off by default).
    direct: bool = False
    # Leave the files after each repetition (IOR -k); on a posix: target they
    # stay in PATH/benchfs-<token>-p<k>/.
    keep_files: bool = False
    phases: list[Phase] = ["write", "read"]
    tool: WorkloadTool = "builtin"
    # The tool's own arguments; BenchFS adds where it writes and its output options.
    tool_args: list[str] = []
    fio_job: Annotated[str, Field(min_length=1)] | None = None  # a fio job file
    # The tool's binary, or the directory holding it (None: PATH, then $IOR_BIN_DIR
    # and /opt/ior/bin for ior and mdtest).
    tool_path: Annotated[str, Field(min_length=1)] | None = None
    interface: Interface = "native"

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.interface == "mount" and self.target != "benchfs":
            raise ValueError(
                f'interface = "mount" mounts BenchFS: it needs target = "benchfs", '
                f"not {self.target!r}"
            )
        if self.tool == "builtin" and (self.tool_args or self.tool_path):
            raise ValueError(
                "tool_args and tool_path need a tool (workload.tool = fio, ior, mdtest)"
            )
        if self.fio_job is not None and self.tool != "fio":
            raise ValueError(f'fio_job needs tool = "fio", not {self.tool!r}')
        if self.block_size % self.transfer_size:
            raise ValueError(
                f"block_size ({self.block_size}) must be a multiple of "
                f"transfer_size ({self.transfer_size})"
            )
        if not self.phases or len(set(self.phases)) != len(self.phases):
            raise ValueError(f"phases must be distinct and not empty, got {self.phases}")
        if self.phases[0] != "write":
            raise ValueError("phases must start with 'write': a new file system holds no data")
        if self.queue_depth != 1 and self.posix_path is not None:
            raise ValueError("a posix: target keeps one transfer in flight: queue_depth must be 1")
        if self.queue_depth != 1 and self.interface == "mount":
            raise ValueError(
                'interface = "mount" keeps one transfer in flight per rank: queue_depth must be 1'
            )
        return self

    @property
    def posix_path(self) -> str | None:
        """The directory of a ``posix:PATH`` target, None for BenchFS."""
        return self.target.removeprefix("posix:") if self.target.startswith("posix:") else None

    @property
    def mounted(self) -> bool:
        """The ranks (or the tool) work on a mounted file system: a posix:
        target, or BenchFS through its mount."""
        return self.posix_path is not None or self.interface == "mount"


class MountConfig(Section):
    """How every node mounts BenchFS with ``workload.interface = "mount"``
    (the mount is the run's own: private, read-write, never allow_other)."""

    # FUSE worker threads of each mount: several ranks' requests overlap
    # (0: served from the FUSE session thread itself).
    threads: Annotated[int, Field(ge=0, le=MAX_MOUNT_THREADS)] = 4
    # The kernel's caches of attributes and names; 0 (the default) is safe
    # with several nodes writing: every stat asks the daemons.
    attr_timeout_s: CacheSeconds = 0.0
    entry_timeout_s: CacheSeconds = 0.0
    # Microseconds the session thread polls for a program's next request
    # after serving one itself, before sleeping (0: none; docs/MOUNT.md).
    session_spin_us: Annotated[int, Field(ge=0, le=MAX_MOUNT_SESSION_SPIN_US)] = 0


class PreflightThresholds(Section):
    # The two [preflight.thresholds] knobs; mapped onto the health policy's Thresholds
    # (benchfs.health.thresholds) by benchfs.run.preflight.health_thresholds.
    outlier_factor: Annotated[float, Field(gt=1, le=1e6, allow_inf_nan=False)] = 10.0
    max_await_ms: Annotated[float, Field(gt=0, le=MAX_SECONDS * 1000, allow_inf_nan=False)] = 500.0


class PreflightConfig(Section):
    enabled: bool = True
    exclude_slow: bool = True
    runtime_s: Seconds = 4.0
    min_nodes: Annotated[int, Field(ge=1, le=MAX_COUNT)] = 1
    thresholds: PreflightThresholds = PreflightThresholds()


class HistoryConfig(Section):
    """The results database (docs/HISTORY.md): every run's nodes and verdicts, and what
    the preflight makes of them."""

    # Write this run into the history (after its results are written).
    enabled: bool = True
    # None: SQLite, ``<output.results_dir>/history.sqlite``. Else a file path (SQLite) or
    # ``postgresql://user@host/db``: its password comes from ~/.pgpass, never the URL, since
    # the URL is saved in every manifest.
    url: Annotated[str, Field(min_length=1)] | None = None
    # The cluster name the nodes are kept under (None: $SLURM_CLUSTER_NAME, else this host).
    cluster: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")] | None = None
    # What the preflight does with a node flagged in flagged_runs of its last_runs
    # runs (its latest included): exclude it, flag it and keep it, or not look.
    preflight: Literal["exclude", "flag", "off"] = "exclude"
    flagged_runs: Annotated[int, Field(ge=1, le=100)] = 2
    last_runs: Annotated[int, Field(ge=1, le=100)] = 3
    # Only runs within this many hours count as evidence.
    max_age_h: Annotated[float, Field(gt=0, le=MAX_SECONDS / 3600, allow_inf_nan=False)] = 24.0
    # How long a write waits for another writer's lock.
    lock_timeout_s: Seconds = 30.0

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.flagged_runs > self.last_runs:
            raise ValueError(
                f"flagged_runs ({self.flagged_runs}) cannot exceed last_runs ({self.last_runs})"
            )
        if self.url is not None and _URL_PASSWORD.match(self.url):
            raise ValueError(
                "url must not hold a password (it is saved in every manifest): "
                "put it in ~/.pgpass or the file $PGPASSFILE names"
            )
        return self


# scheme://user:password@...: the password part.
_URL_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@:]*:[^/@]*@")
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


# What a straggler found while a phase runs does to the run (docs/CONFIG.md, [live]).
StragglerAction = Literal["warn", "stop", "exclude"]


class LiveConfig(Section):
    """The live per-node view while each phase runs (docs/DIAGNOSE.md, "The live view")."""

    # Seconds between samples of every node (a stats request to each daemon, the ranks'
    # progress records); 0 turns the live view off (no samples, no alerts, no verdicts.json).
    interval_s: Annotated[float, Field(ge=0, le=60, allow_inf_nan=False)] = 1.0
    # warn: name the node and go on; stop: end the run with an error naming it; exclude:
    # in a sweep, leave the node out from the next point on (a single run: as warn).
    straggler: StragglerAction = "warn"


class OutputConfig(Section):
    results_dir: Annotated[str, Field(min_length=1)] = "results"
    label: Annotated[str, Field(pattern=_LABEL.pattern, max_length=80)] = "run"


class RunConfig(Section):
    cluster: ClusterConfig = ClusterConfig()
    launcher: LauncherConfig = LauncherConfig()
    workload: WorkloadConfig = WorkloadConfig()
    metadata: MetadataConfig = MetadataConfig()
    suite: SuiteConfig = SuiteConfig()
    mount: MountConfig = MountConfig()
    preflight: PreflightConfig = PreflightConfig()
    output: OutputConfig = OutputConfig()
    history: HistoryConfig = HistoryConfig()
    live: LiveConfig = LiveConfig()

    @model_validator(mode="after")
    def _one_workload(self) -> Self:
        tool = self.workload.tool
        if tool != "builtin" and not self.workload.mounted:
            raise ValueError(
                f"workload.tool = {tool!r} needs a mounted file system: set "
                'workload.interface = "mount" (BenchFS through its mount) or '
                'workload.target = "posix:PATH"'
            )
        if tool != "builtin" and self.metadata.mode != "off":
            raise ValueError(
                f"workload.tool = {tool!r} replaces the built-in workload: "
                'metadata.mode must be "off"'
            )
        suite = self.suite
        if suite.name != "none" and tool != "builtin":
            raise ValueError(
                f"suite.name = {suite.name!r} runs its own phases: workload.tool must be "
                f'"builtin" (suite.tool = "ior" runs IOR and mdtest, "io500" the io500 binary)'
            )
        if suite.name != "none" and self.metadata.mode != "off":
            raise ValueError(
                f"suite.name = {suite.name!r} runs its own metadata phases: "
                'metadata.mode must be "off"'
            )
        if suite.tool in EXTERNAL_TOOLS and not self.workload.mounted:
            raise ValueError(
                f'suite.tool = "{suite.tool}" runs on a mounted file system: set '
                'workload.target = "posix:PATH" or workload.interface = "mount"'
            )
        return self
