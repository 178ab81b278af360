"""What every workload rank is told: one JSON file shared by all ranks.

The orchestrator writes it; ``python -m benchfs.node.rank SPEC.json``
reads it. It also names the files ranks leave behind, so both sides agree
(the names in ``workload_dir`` are the results directory's, from
``analysis.layout``):

- ``<workload_dir>/ranks.jsonl``: one row per rank, repetition and phase;
- ``<workload_dir>/connect.jsonl``: one row per rank of the engine's
  client, when it began and ended connecting to every daemon;
- ``<workload_dir>/latency-<phase>-<repetition>.npy``: every op's latency
  in ns (u64), ranks in order (``ops`` of each row says how many are its);
- ``<state_dir>/phase.json``: the phase running now (rank 0 writes it);
- ``<state_dir>/progress/<repetition>-<phase>/rank<r>[.wearout]``: each
  rank's live progress, 16 bytes (bytes done, ops done: u64 LE);
- ``<state_dir>/ranks/rank<r>.json``: host and pid of each rank as started,
  and ``rank<r>.error`` with the message of a rank that failed.

Where the ranks' files go: the daemons (the engine's client); a ``posix:``
target's ``posix_dir``, the same path on every node; or, through the mount
(``interface = "mount"``), ``<mount_root>/<host>/<mount_dir_name>``: each
rank's own node's mount point of the one cluster (``directory_of``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from analysis.layout import CONNECT_FILE, RANKS_FILE, latency_file_name
from benchfs.config.model import RunConfig, Transport
from benchfs.config.suite import SuiteSizes
from benchfs.errors import ConfigError
from benchfs.workload.metadata_spec import (
    METADATA_PHASE_NAMES,
    TREE_PHASE_NAMES,
    MetadataWorkload,
    tree_dirs,
)
from benchfs.workload.summary import WorkloadParameters

PHASE_FILE = "phase.json"


@dataclass(frozen=True)
class WorkloadSpec:
    registry_dir: str
    node_names: list[str]
    transport: Transport
    connect_deadline_s: float
    rpc_deadline_s: float
    hosts: list[str]
    tasks_per_node: int
    file_name: str
    file_per_process: bool
    transfer_size: int
    block_size: int
    segments: int
    repetitions: int
    phases: list[str]
    verify: bool
    reorder_tasks: bool
    stonewall_s: float
    workload_dir: str
    state_dir: str
    trace_dir: str | None = None
    shm_dir: str | None = None
    queue_depth: int = 1
    # The data workload runs (false: metadata only).
    run_data: bool = True
    # None: no metadata phases.
    metadata: MetadataWorkload | None = None
    # The run's seed of the data pattern (``run_seed``); each repetition
    # writes and verifies with its own (``seed_for``), so data left by
    # another run or repetition at the same offsets fails verification.
    verify_seed: int = 0
    # The suite's phases instead of the workloads.
    suite: SuiteSizes | None = None

    def seed_for(self, repetition: int) -> int:
        """The data pattern's seed of one repetition (a u64)."""
        return _u64(f"{self.verify_seed}:{repetition}")

    # A posix: target: the directory the ranks use on every node (no daemons).
    posix_dir: str | None = None
    direct: bool = False
    target: str = "benchfs"
    keep_files: bool = False
    # "native" or "mount": with "mount", the nodes' mount points and the run's directory in each.
    interface: str = "native"
    mount_root: str | None = None
    mount_dir_name: str | None = None

    @property
    def on_files(self) -> bool:
        """The ranks use plain POSIX calls on a directory (posix: or the mount)."""
        return self.posix_dir is not None or self.mount_root is not None

    def directory_of(self, rank: int) -> Path:
        """The directory a rank works in (``on_files`` only)."""
        if self.mount_root is not None:
            assert self.mount_dir_name is not None
            return Path(self.mount_root) / self.host_of(rank) / self.mount_dir_name
        assert self.posix_dir is not None
        return Path(self.posix_dir)

    @property
    def ranks(self) -> int:
        return len(self.hosts) * self.tasks_per_node

    @property
    def read_rank_shift(self) -> int:
        """IOR ``-C``: read what the task one node further wrote (0: own data)."""
        if not self.reorder_tasks:
            return 0
        return self.tasks_per_node % self.ranks

    def host_of(self, rank: int) -> str:
        """Ranks fill hosts in order, ``tasks_per_node`` each (``--map-by slot``)."""
        return self.hosts[rank // self.tasks_per_node]

    def expected_bytes(self, phase: str) -> int:
        """Bytes all ranks move in a phase, as the live display counts them
        (0: not known before, as in a suite's phases, which end on time)."""
        if self.suite is not None:
            return 0
        if phase in METADATA_PHASE_NAMES:
            per_file = {"File creation": "write_bytes", "File read": "read_bytes"}.get(phase)
            md = self.metadata
            per_item = getattr(md, per_file) if md is not None and per_file else 0
            return self.expected_items(phase) * int(per_item)
        return self.ranks * self.block_size * self.segments

    def expected_items(self, phase: str) -> int:
        """Items of all ranks in a metadata phase (without a stonewall), 0 for a data phase."""
        if self.suite is not None:
            return 0
        if phase not in METADATA_PHASE_NAMES:
            return 0
        md = self.metadata
        if md is None:
            return self.ranks if phase in TREE_PHASE_NAMES else 0
        if phase in TREE_PHASE_NAMES:
            trees = self.ranks if md.unique_dir else 1
            return trees * tree_dirs(md.tree_depth, md.branch_factor)
        return self.ranks * md.items

    def progress_path(self, repetition: int, phase: str, rank: int, wearout: bool = False) -> Path:
        suffix = ".wearout" if wearout else ""
        return self.progress_dir(repetition, phase) / f"rank{rank}{suffix}"

    def progress_dir(self, repetition: int, phase: str) -> Path:
        return Path(self.state_dir) / "progress" / f"{repetition}-{phase}"

    @property
    def phase_file(self) -> Path:
        return Path(self.state_dir) / PHASE_FILE

    def rank_file(self, rank: int, suffix: str = "json") -> Path:
        return Path(self.state_dir) / "ranks" / f"rank{rank}.{suffix}"

    @property
    def ranks_file(self) -> Path:
        return Path(self.workload_dir) / RANKS_FILE

    @property
    def connect_file(self) -> Path:
        return Path(self.workload_dir) / CONNECT_FILE

    def latency_file(self, phase: str, repetition: int) -> Path:
        return Path(self.workload_dir) / latency_file_name(phase, repetition)

    def parameters(self) -> WorkloadParameters:
        """The test's shape as the summary reports it."""
        return WorkloadParameters(
            api="file-per-process" if self.file_per_process else "shared",
            transfer_size=self.transfer_size,
            block_size=self.block_size,
            segments=self.segments,
            tasks=self.ranks,
            tasks_per_node=self.tasks_per_node,
            repetitions=self.repetitions,
            file_per_process=self.file_per_process,
            reorder_tasks=self.reorder_tasks,
            stonewall_s=self.stonewall_s,
            verify=self.verify,
            queue_depth=self.queue_depth,
            verify_seeds=tuple(self.seed_for(r) for r in range(self.repetitions)),
            target=self.target,
            interface=self.interface,
        )

    def write(self, path: Path) -> Path:
        document = _SPEC.dump_python(self, mode="json")
        path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
        return path

    @classmethod
    def read(cls, path: Path) -> WorkloadSpec:
        try:
            return _SPEC.validate_json(path.read_bytes())
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the document"
            raise ConfigError(f"{path}: not a workload spec: {where}: {first['msg']}") from None
        except OSError as error:
            raise ConfigError(f"{path}: not a workload spec: {error}") from error


# The spec as JSON: written by the orchestrator, read by every rank.
_SPEC: TypeAdapter[WorkloadSpec] = TypeAdapter(WorkloadSpec)


def _u64(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def run_seed(run_id: str) -> int:
    """The data pattern's seed of the run ``run_id`` (a u64)."""
    return _u64(f"benchfs run {run_id}")


def workload_spec(
    config: RunConfig,
    *,
    hosts: list[str],
    node_names: list[str],
    registry_dir: Path,
    workload_dir: Path,
    state_dir: Path,
    trace_dir: Path | None,
    shm_dir: Path | None = None,
    verify_seed: int = 0,
    posix_dir: Path | None = None,
    mount_root: Path | None = None,
    mount_dir_name: str | None = None,
) -> WorkloadSpec:
    """The spec of one run from its config, hosts and directories."""
    workload = config.workload
    cluster = config.cluster
    suite = None if config.suite.name == "none" else config.suite.sizes()
    return WorkloadSpec(
        registry_dir=str(registry_dir),
        node_names=list(node_names),
        transport=cluster.transport,
        connect_deadline_s=cluster.deadlines.connect_s(
            len(node_names), len(hosts) * workload.tasks_per_node
        ),
        rpc_deadline_s=cluster.deadlines.rpc_s,
        hosts=list(hosts),
        tasks_per_node=workload.tasks_per_node,
        file_name=workload.file_name,
        file_per_process=workload.api == "file-per-process",
        transfer_size=workload.transfer_size,
        block_size=workload.block_size,
        segments=workload.segments,
        repetitions=workload.repetitions,
        phases=list(workload.phases),
        verify=workload.verify,
        reorder_tasks=workload.reorder_tasks,
        stonewall_s=workload.stonewall_s if suite is None else suite.stonewall_s,
        workload_dir=str(workload_dir),
        state_dir=str(state_dir),
        trace_dir=None if trace_dir is None else str(trace_dir),
        shm_dir=None if shm_dir is None else str(shm_dir),
        queue_depth=workload.queue_depth,
        run_data=config.metadata.mode != "only",
        metadata=metadata_workload(config),
        verify_seed=verify_seed,
        suite=suite,
        posix_dir=None if posix_dir is None else str(posix_dir),
        direct=workload.direct,
        target=workload.target,
        keep_files=workload.keep_files,
        interface=workload.interface,
        mount_root=None if mount_root is None else str(mount_root),
        mount_dir_name=mount_dir_name,
    )


def metadata_workload(config: RunConfig) -> MetadataWorkload | None:
    """The metadata part of the spec, None when ``metadata.mode`` is off."""
    md = config.metadata
    if md.mode == "off":
        return None
    # mdtest spreads -n over the tree's directories, rounded down to as many
    # in each.
    per_dir = md.items // tree_dirs(md.tree_depth, md.branch_factor)
    return MetadataWorkload(
        items=per_dir * tree_dirs(md.tree_depth, md.branch_factor) if md.tree_depth else md.items,
        phases=list(md.phases),
        unique_dir=md.unique_dir,
        write_bytes=md.write_bytes,
        read_bytes=md.read_bytes,
        stonewall_s=md.stonewall_s,
        repetitions=md.repetitions,
        prefix=md.prefix,
        kind=md.kind,
        tree_depth=md.tree_depth,
        branch_factor=md.branch_factor,
        # Only a posix: target renames directories; BenchFS (native or
        # mounted) refuses to by design (docs/NAMESPACE.md).
        dir_rename=config.workload.target.startswith("posix:"),
    )
