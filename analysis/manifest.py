"""``manifest.json``'s model: what ran, where, with which settings and build.

Written by the run (``benchfs.results.manifest``, its one writer), read back
by ``benchfs`` (the history, ``benchfs clean``) and by the report and
compare through ``analysis.loaders.run``: one model for both, here beneath
them. Each step's record is typed; what another module owns in detail (a
node's preflight measurement) stays a JSON object inside it. A part that is absent from a
record is left out of the JSON, as the step wrote it (``_absent``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from analysis.layout import DATA_VERSION
from analysis.verdicts import Alert

# aborted: the orchestrator died; a later run or `benchfs clean` found what it left.
Status = Literal["running", "completed", "failed", "interrupted", "aborted"]
Interface = Literal["native", "mount"]


def _is_none(value: object) -> bool:
    return value is None


# An optional part a step writes only when it has it: absent from the JSON when None.
_absent: Any = Field(default=None, exclude_if=_is_none)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HostEntry(_Record):
    name: str
    slots: int


class ExcludedHost(_Record):
    """A host left out of the run, why, and the measurements that showed it."""

    name: str
    reason: str
    evidence: dict[str, Any] = {}


class HostsRecord(_Record):
    given: list[HostEntry]
    used: list[HostEntry]
    excluded: list[ExcludedHost] = []


class RanksRecord(_Record):
    """Processes as actually launched (not as requested)."""

    launcher: str
    per_host: dict[str, int]
    total: int
    daemons_per_host: dict[str, int] = {}
    # The workload ranks' command line exactly as started (launcher and program).
    command: list[str] = []

    @model_validator(mode="after")
    def _total_matches(self) -> RanksRecord:
        if self.total != sum(self.per_host.values()):
            raise ValueError(f"total {self.total} != sum of per_host {sum(self.per_host.values())}")
        return self


class SweepRecord(_Record):
    index: int
    count: int
    values: dict[str, Any]


class DaemonRecord(_Record):
    """A daemon as it registered."""

    node_name: str | None
    node_id: int | None
    host: str | None
    pid: int | None
    data_dir: str | None


class MembershipRecord(_Record):
    """How the clients learned the membership (the one members file, or the N
    registry records) and how they connect to the daemons."""

    source: Literal["members file", "registry records"]
    file: str | None
    daemons: int
    integrity: str
    # Seconds to write the members file, and its size.
    write_s: float
    bytes: int
    connections: str


class HistoryNode(_Record):
    """What the history said of one node before the run."""

    node: str
    decision: str
    status: str
    reason: str | None
    line: str
    # The runs it was judged on (``benchfs.history.consult``).
    evidence: dict[str, Any]


class HistoryConsulted(_Record):
    status: Literal["consulted"] = "consulted"
    database: str
    cluster: str
    action: str
    rule: str
    nodes: list[HistoryNode]


class HistoryNotConsulted(_Record):
    status: Literal["not consulted"] = "not consulted"
    reason: str


HistoryRecord = Annotated[HistoryConsulted | HistoryNotConsulted, Field(discriminator="status")]


class PreflightDecision(_Record):
    node: str
    decision: str
    policy_excluded: bool
    reason: str | None
    evidence: dict[str, Any]


class PreflightRun(_Record):
    """The preflight's measurements and what it decided from them."""

    status: Literal["run"] = "run"
    exclude_slow: bool
    directory: str
    per_node_directories: dict[str, str]
    pattern: dict[str, Any]
    thresholds: dict[str, Any]
    minimum_nodes: int
    kept: list[str]
    excluded: list[str]
    decisions: list[PreflightDecision]
    # Every node's measurement (``benchfs.health.model.NodeMeasurement``).
    nodes: list[dict[str, Any]]
    history: HistoryRecord | None = _absent


class PreflightNotRun(_Record):
    status: Literal["not run"] = "not run"
    reason: str
    history: HistoryRecord | None = _absent


PreflightRecord = Annotated[PreflightRun | PreflightNotRun, Field(discriminator="status")]


class StragglersChecked(_Record):
    status: Literal["checked"] = "checked"
    stragglers: list[str]
    # Per node: its iostat figures and verdict (``analysis.stats.stragglers``).
    nodes: list[dict[str, Any]]
    unreadable: list[str]


class StragglersNotChecked(_Record):
    status: Literal["not checked"] = "not checked"
    reason: str
    unreadable: list[str]


StragglersRecord = Annotated[
    StragglersChecked | StragglersNotChecked, Field(discriminator="status")
]


class LiveRule(_Record):
    factor: float
    min_extra_ms: float
    intervals: int
    min_peers: int


class LiveRecord(_Record):
    """The live view (docs/DIAGNOSE.md): its interval, rule, policy and every alert raised."""

    interval_s: float
    straggler: str
    source: str
    rule: LiveRule
    readings: int
    alerts: list[Alert]


class RanksTarget(_Record):
    """A posix: target of BenchFS's own ranks: its directory and each host's file system."""

    target: str
    directory: str
    direct: bool
    file_systems: dict[str, Any]


class ToolTarget(_Record):
    """Where a tool's ranks worked."""

    target: str
    interface: Interface
    directory: str


class MountOptions(_Record):
    """The settings a mount ran with, as recorded. ``benchfs.mount.settings.MountSettings``
    is this shape with the engine's bounds and the entry points' checks; a record
    is read back without them (a bound may change, root may have written it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    read_only: bool
    allow_other: bool
    threads: int
    attr_timeout_s: float
    entry_timeout_s: float
    rpc_deadline_s: float
    connect_deadline_s: float
    session_spin_us: int


class MountNode(_Record):
    """One node's mount: where, and once it was live, what its mount program said of
    it (``benchfs.mount.run_mount.MountReady``, in its order); a mount that never
    went live has its mount point only."""

    node: str | None = _absent
    hostname: str | None = _absent
    pid: int | None = _absent
    mount_point: str
    fs_type: str | None = _absent  # as the kernel lists it: fuse.benchfs
    source: str | None = _absent


class MountRecord(_Record):
    """The mounts of the run: their options, root, and per node the mount point and
    what the kernel lists; with BenchFS's own ranks, the file system they found."""

    options: MountOptions
    root: str
    nodes: dict[str, MountNode]
    file_systems: dict[str, Any] | None = _absent


class ToolRecord(_Record):
    """A tool run: name, binary, version line, exact command lines, outputs."""

    name: str
    binary: str
    version: str
    command_lines: dict[str, list[str]]  # node (or "job") -> argv
    launched: dict[str, list[str]]  # the launcher's argv
    outputs: list[str]  # relative to the results directory
    ini: str | None = _absent  # the io500 binary's configuration, as given to it


class SyncAfterCreate(_Record):
    phases: list[str]
    how: str


class SuiteChecks(_Record):
    """What the suite's phases do beside their timed I/O (IOR -e -R, mdtest -Y -X)."""

    fsync_after_write: list[str]
    sync_after_create: SyncAfterCreate
    verify_read: list[str]
    by: str


class SuiteSizes(_Record):
    """What one suite run does: the stonewall and the ceilings of every phase.

    The write phases end on the stonewall; the sizes only bound them (IO500's
    own defaults are ceilings no system reaches in 300 s)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    tool: str
    stonewall_s: float
    ior_easy_transfer_size: int
    ior_easy_block_size: int
    ior_hard_segments: int
    mdtest_easy_files: int
    mdtest_hard_files: int


class SuiteRecord(SuiteSizes):
    """A suite run: the suite, its tool, every size and stonewall, the checks applied."""

    checks: SuiteChecks


class NativeBuild(_Record):
    """The engine's build, as ``benchfs_native.build_info`` reports it."""

    available: Literal[True] = True
    version: str
    profile: str
    git_revision: str
    rustc: str
    source_dir: str
    ucx: str  # the libucp loaded at run time


class NativeUnavailable(_Record):
    available: Literal[False] = False
    reason: str


NativeRecord = Annotated[NativeBuild | NativeUnavailable, Field(discriminator="available")]


class Manifest(_Record):
    data_version: int = DATA_VERSION
    label: str
    command_line: list[str]
    # The validated run configuration dumped (``benchfs.config.RunConfig``): JSON
    # here, as analysis imports no benchfs model and an old run's must still load.
    effective_config: dict[str, Any]
    sweep: SweepRecord | None = None
    package: dict[str, str]
    # The engine's build info, or why it is unavailable.
    native: NativeRecord
    hosts: HostsRecord
    ranks: RanksRecord | None = None
    # What the preflight step did (or why it did not run), and its evidence.
    preflight: PreflightRecord | None = None
    # Nodes whose disk was slow during the workload (iostat), per node and since when.
    stragglers: StragglersRecord | None = None
    live: LiveRecord | None = None
    daemons: list[DaemonRecord] = []
    membership: MembershipRecord | None = None
    # A posix: target, or where a tool's ranks worked.
    target: RanksTarget | ToolTarget | None = None
    # How the workload reached BenchFS: "native" (the engine's client) or
    # "mount" (POSIX calls on its FUSE mount on every node).
    interface: Interface = "native"
    mount: MountRecord | None = None
    tool: ToolRecord | None = None
    suite: SuiteRecord | None = None
    # Anything the reader of the results should know that is not an error.
    notes: list[str] = []
    environment: dict[str, str]
    launched_from: str
    python: str
    start_time: datetime
    end_time: datetime | None = None
    status: Status = "running"
    error: str | None = None


class ToolDirManifest(_Record):
    """What stands for the manifest of a directory of tool outputs (not made by
    ``benchfs run``): its files as read, and those no loader recognized."""

    label: str
    source: str
    tools: str
    # Per file: its tool, format, version, phases, what it was used as
    # (``analysis.convert.summary``).
    tool_outputs: list[dict[str, Any]]
    ignored_files: list[str]


_T = TypeVar("_T")


class ManifestPart(Generic[_T]):
    """One part of the manifest of the object it is read on (its ``manifest``, the
    JSON object), as its record types it; None where it is absent or not of that
    shape (a manifest written by hand, a directory of tool outputs)."""

    def __init__(self, adapter: TypeAdapter[_T], key: str) -> None:
        self.adapter, self.key = adapter, key

    def __get__(self, owner: _HasManifest, kind: type | None = None) -> _T | None:
        try:
            return self.adapter.validate_python(owner.manifest.get(self.key))
        except ValidationError:
            return None


class _HasManifest(Protocol):
    manifest: dict[str, Any]


# The parts the report and compare read.
SWEEP: TypeAdapter[SweepRecord | None] = TypeAdapter(SweepRecord | None)
HOSTS: TypeAdapter[HostsRecord | None] = TypeAdapter(HostsRecord | None)
PREFLIGHT: TypeAdapter[PreflightRecord | None] = TypeAdapter(PreflightRecord | None)
INTERFACE: TypeAdapter[Interface | None] = TypeAdapter(Interface | None)
START_TIME: TypeAdapter[datetime | None] = TypeAdapter(datetime | None)
