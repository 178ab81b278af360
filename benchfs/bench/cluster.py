"""A local cluster run against fio (and the disk through ``posix:``), in
paired rounds on the same directory.

Each round runs, back to back:

- ``benchfs run`` on the embedded local cluster (``nodes`` daemons, one
  workload rank per node, file per process, write then read, ``queue_depth``
  transfers in flight per rank; the daemons store with O_DIRECT);
- fio with the same total bytes, block size and number of jobs (io_uring,
  O_DIRECT, ``iodepth`` = the same queue depth), each job writing a fresh
  file that every write extends (``fallocate=none``), as the daemons' chunk
  files and the ``posix:`` files grow: fio's default preallocates, and on
  ext4 an O_DIRECT write that extends its file cannot be issued without
  blocking, so io_uring hands it to a kernel worker thread
  (docs/perf-log/storage-writes.md, "Storage: writes that extend their file");
- at queue depth 1, the same ``benchfs run`` workload on a ``posix:``
  target in the same parent directory (``workload.direct``: pwrite/pread
  with O_DIRECT, no daemons): the same ranks and harness on the disk itself.

The run goes in the middle when there are three sides and the others
alternate around it, so the run meets both references every round and
neither always goes first; with two sides the order alternates. A
comparison is the median of its per-round ratios with their spread
(``benchfs.bench.paired``): on a disk whose speed drifts, the two sides of a
round meet the same drift.
"""

from __future__ import annotations

import os
import shutil
import statistics
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchfs.bench.paired import PairedRatios
from benchfs.bench.scope import bench_scope
from benchfs.bench.storage import DEFAULT_ROUNDS
from benchfs.config.plan import apply_overrides, load_config
from benchfs.config.sizes import format_size
from benchfs.errors import ToolError
from benchfs.run.observer import RunObserver
from benchfs.run.orchestrate import run_plan
from benchfs.tools.fio import FioJob, run_fio
from benchfs.tools.huge_pages import require_huge_pages

# Transfers in flight per rank on every side by default (workload.queue_depth, fio iodepth).
CLIENT_IN_FLIGHT = 16
# The run's bandwidth over each reference's, judged on the paired median.
TARGET = 0.90

Side = Literal["run", "fio", "posix"]
Op = Literal["write", "read"]
OPS: tuple[Op, ...] = ("write", "read")


@dataclass(frozen=True)
class ClusterBenchCase:
    nodes: int = 4
    ranks_per_node: int = 1
    transfer_size: int = 1 << 20
    block_size: int = 256 << 20
    queue_depth: int = CLIENT_IN_FLIGHT
    rounds: int = DEFAULT_ROUNDS
    # The posix: side; it keeps one transfer in flight, so it runs only at queue depth 1.
    posix: bool = True
    # The daemons' bulk_spin_us (None: the default).
    bulk_spin_us: int | None = None
    # The run sides' live.interval_s (None: the default; 0: the live view off).
    live_interval_s: float | None = None
    # fio's buffers from the huge-page pool, as the engine's lie on huge pages.
    fio_huge_pages: bool = False

    def __post_init__(self) -> None:
        for name in ("nodes", "ranks_per_node", "transfer_size", "block_size",
                     "queue_depth", "rounds"):  # fmt: skip
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")

    @property
    def jobs(self) -> int:
        return self.nodes * self.ranks_per_node

    @property
    def total_bytes(self) -> int:
        return self.jobs * self.block_size

    @property
    def sides(self) -> tuple[Side, ...]:
        with_posix = self.posix and self.queue_depth == 1
        return ("run", "fio", "posix") if with_posix else ("run", "fio")

    def order(self, round_index: int) -> tuple[Side, ...]:
        """The sides of one round in the order they run (see the module's doc)."""
        if len(self.sides) == 3:
            return ("fio", "run", "posix") if round_index % 2 == 0 else ("posix", "run", "fio")
        return ("run", "fio") if round_index % 2 == 0 else ("fio", "run")

    def describe(self, side: Side) -> str:
        """What decides a side's speed: the tool, queue depth, caching."""
        depth = self.queue_depth
        if side == "run":
            return (
                f"benchfs run: {self.nodes} daemons, {self.jobs} ranks, QD {depth} "
                "(the client's window), daemons store with O_DIRECT"
            )
        if side == "fio":
            return (
                f"fio: {self.jobs} jobs, io_uring, iodepth {depth}, direct=1 (O_DIRECT), "
                f"fresh files (fallocate=none), buffers on {fio_jobs(self)[0].memory}"
            )
        return f"posix: the same {self.jobs} ranks on the disk, pwrite/pread, QD 1, O_DIRECT"


@dataclass(frozen=True)
class Bandwidths:
    write_MiBps: float
    read_MiBps: float

    @property
    def parity(self) -> float:
        """Read over write bandwidth (1.0: reads as fast as writes)."""
        return self.read_MiBps / self.write_MiBps if self.write_MiBps > 0 else 0.0

    def of(self, op: Op) -> float:
        return self.write_MiBps if op == "write" else self.read_MiBps

    def to_json(self) -> dict[str, float]:
        return {**asdict(self), "parity": round(self.parity, 3)}


@dataclass(frozen=True)
class Round:
    """Every side's figures of one round, and the order they ran in."""

    order: tuple[Side, ...]
    sides: Mapping[Side, Bandwidths]
    results_dirs: Mapping[Side, str]  # the benchfs run sides' results directories

    def to_json(self) -> dict[str, Any]:
        return {
            "order": list(self.order),
            **{side: figures.to_json() for side, figures in self.sides.items()},
            "results_dirs": dict(self.results_dirs),
        }


@dataclass(frozen=True)
class Comparison:
    """The run against one reference for one direction, round by round."""

    reference: Side
    op: Op
    paired: PairedRatios

    @property
    def met(self) -> bool:
        return self.paired.median >= TARGET

    @property
    def rounds_met(self) -> int:
        return self.paired.count(lambda ratio: ratio >= TARGET)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": f"run / {self.reference}",
            "reference": self.reference,
            "op": self.op,
            "paired": self.paired.to_json(),
            "target": TARGET,
            "met": self.met,
            "rounds_met": self.rounds_met,
        }


@dataclass
class ClusterBenchReport:
    case: ClusterBenchCase
    directory: str
    rounds: list[Round] = field(default_factory=list)
    # 1, 5 and 15 minute load averages when the rounds started and ended.
    load_start: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_end: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def figures(self, side: Side, op: Op) -> list[float]:
        return [r.sides[side].of(op) for r in self.rounds]

    def median(self, side: Side) -> Bandwidths:
        """A side's median write and read (for orientation; judge by the comparisons)."""
        return Bandwidths(
            statistics.median(self.figures(side, "write")),
            statistics.median(self.figures(side, "read")),
        )

    @property
    def comparisons(self) -> list[Comparison]:
        return [
            Comparison(
                reference, op, PairedRatios.of(self.figures("run", op), self.figures(reference, op))
            )
            for reference in self.case.sides[1:]
            for op in OPS
        ]

    def to_json(self) -> dict[str, Any]:
        sides = self.case.sides
        return {
            "case": {
                **asdict(self.case),
                "jobs": self.case.jobs,
                "total_bytes": self.case.total_bytes,
                "sides": list(sides),
            },
            "directory": self.directory,
            "setup": {side: self.case.describe(side) for side in sides},
            "load_average": {"start": list(self.load_start), "end": list(self.load_end)},
            "medians": {side: self.median(side).to_json() for side in sides},
            "comparisons": [c.to_json() for c in self.comparisons],
            "rounds": [r.to_json() for r in self.rounds],
        }


def _run_side(
    case: ClusterBenchCase,
    root: Path,
    results_dir: Path,
    observer: RunObserver,
    extra: Mapping[str, Any],
    label: str,
) -> tuple[Bandwidths, Path]:
    overrides = {
        "cluster.local_nodes": case.nodes,
        "cluster.data_dir": str(root),
        "workload.tasks_per_node": case.ranks_per_node,
        "workload.transfer_size": case.transfer_size,
        "workload.block_size": case.block_size,
        "workload.api": "file-per-process",
        "workload.phases": ["write", "read"],
        "workload.queue_depth": case.queue_depth,
        # Same bytes as fio: the size ends each phase, not a stonewall.
        "workload.stonewall_s": 0,
        "preflight.enabled": False,
        "output.results_dir": str(results_dir),
        "output.label": label,
        **({} if case.bulk_spin_us is None else {"cluster.bulk_spin_us": case.bulk_spin_us}),
        **({} if case.live_interval_s is None else {"live.interval_s": case.live_interval_s}),
        **extra,
    }
    plan = apply_overrides(load_config(None), overrides)
    (result,) = run_plan(plan, command_line=["benchfs", "bench", "cluster"], observer=observer)
    if result.summary is None:
        raise ToolError(f"benchfs run ({label}) left no summary: {result.error or result.status}")
    by_phase = {row["phase"]: row for row in result.summary["phases"]}
    return (
        Bandwidths(
            write_MiBps=float(by_phase["write"]["bwMeanMIB"] or 0.0),
            read_MiBps=float(by_phase["read"]["bwMeanMIB"] or 0.0),
        ),
        result.run_dir,
    )


def fio_jobs(case: ClusterBenchCase) -> list[FioJob]:
    """fio's side of ``case``: a write phase on fresh files, then reading them back."""
    common: dict[str, Any] = {
        "bs": case.transfer_size,
        "iodepth": case.queue_depth,
        "size": case.block_size,
        "numjobs": case.jobs,
        "direct": True,
        "ioengine": "io_uring",
        "huge_pages": case.fio_huge_pages,
    }
    # The write phase extends fresh files, as the other sides do.
    return [
        FioJob(
            name="cluster_write", rw="write", unlink=False, extra={"fallocate": "none"}, **common
        ),
        FioJob(name="cluster_read", rw="read", unlink=True, **common),
    ]


def _fio_side(case: ClusterBenchCase, root: Path) -> Bandwidths:
    jobs = fio_jobs(case)
    report = run_fio(jobs, root, timeout_s=1800)
    return Bandwidths(
        write_MiBps=report.jobs[0].write.bw_mib_s, read_MiBps=report.jobs[1].read.bw_mib_s
    )


def _fresh(path: Path) -> Path:
    """An empty private directory at ``path``: every side starts each round on an empty one."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(mode=0o700)
    return path


def run_cluster_bench(
    case: ClusterBenchCase,
    *,
    directory: Path | None = None,
    results_dir: Path = Path("results"),
    observer: RunObserver | None = None,
    on_progress: Callable[[str], None] = lambda _: None,
) -> ClusterBenchReport:
    """Every side in every round, in fresh directories under ``directory``."""
    observer = observer or RunObserver()
    if case.fio_huge_pages:  # before any side runs, not at the first fio
        (write, _) = fio_jobs(case)
        require_huge_pages([write.buffer_bytes] * write.numjobs)
    with bench_scope(directory, "benchfs-bench-cluster-") as (_, root):
        return _rounds(case, root, results_dir, observer, on_progress)


def _rounds(
    case: ClusterBenchCase,
    root: Path,
    results_dir: Path,
    observer: RunObserver,
    on_progress: Callable[[str], None],
) -> ClusterBenchReport:
    report = ClusterBenchReport(case, str(root.parent))
    size = (
        f"{case.jobs} ranks, {format_size(case.total_bytes)} in "
        f"{format_size(case.transfer_size)} transfers, queue depth {case.queue_depth}"
    )

    def run_one(side: Side, index: int) -> tuple[Bandwidths, Path | None]:
        where = _fresh(root / side)
        if side == "fio":
            return _fio_side(case, where), None
        extra: dict[str, Any] = {}
        if side == "posix":  # the daemons' directory is not used: keep it off the target
            extra = {
                "workload.target": f"posix:{where}",
                "workload.direct": True,
                "cluster.data_dir": str(_fresh(root / "posix-state")),
            }
        label = f"bench-cluster-{side}-r{index + 1}"
        return _run_side(case, where, results_dir, observer, extra, label)

    report.load_start = os.getloadavg()
    for index in range(case.rounds):
        order = case.order(index)
        figures: dict[Side, Bandwidths] = {}
        run_dirs: dict[Side, str] = {}
        for side in order:
            on_progress(f"round {index + 1}/{case.rounds}: {side} ({size})")
            figures[side], run_dir = run_one(side, index)
            if run_dir is not None:
                run_dirs[side] = str(run_dir)
        report.rounds.append(Round(order, {s: figures[s] for s in case.sides}, run_dirs))
    report.load_end = os.getloadavg()
    return report
