"""A local cluster run against fio on the same disk, in one run.

`benchfs run` on the embedded local cluster (4 daemons, one workload rank
per node) writes then reads; fio then writes and reads the same total bytes
with the same block size and the same number of jobs (io_uring, O_DIRECT,
the client's window as queue depth) in the same directory. Reported: the
ratios run / fio for write and for read, and read/write parity of each side
(read bandwidth over write bandwidth). Ratios from one run are what to
compare; absolute figures drift with the machine.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchfs.config.plan import apply_overrides, load_config
from benchfs.config.sizes import format_size
from benchfs.errors import ToolError
from benchfs.run.observer import RunObserver
from benchfs.run.orchestrate import run_plan
from benchfs.tools.fio import FioJob, run_fio

# Transfers in flight per rank on both sides (workload.queue_depth, fio iodepth).
CLIENT_IN_FLIGHT = 16


@dataclass(frozen=True)
class ClusterBenchCase:
    nodes: int = 4
    ranks_per_node: int = 1
    transfer_size: int = 1 << 20
    block_size: int = 256 << 20
    queue_depth: int = CLIENT_IN_FLIGHT

    @property
    def jobs(self) -> int:
        return self.nodes * self.ranks_per_node

    @property
    def total_bytes(self) -> int:
        return self.jobs * self.block_size


@dataclass(frozen=True)
class Bandwidths:
    write_MiBps: float
    read_MiBps: float

    @property
    def parity(self) -> float:
        """Read over write bandwidth (1.0: reads as fast as writes)."""
        return self.read_MiBps / self.write_MiBps if self.write_MiBps > 0 else 0.0


@dataclass(frozen=True)
class ClusterBenchReport:
    case: ClusterBenchCase
    directory: str
    run: Bandwidths
    fio: Bandwidths
    results_dir: str

    @property
    def write_ratio(self) -> float:
        return self.run.write_MiBps / self.fio.write_MiBps if self.fio.write_MiBps else 0.0

    @property
    def read_ratio(self) -> float:
        return self.run.read_MiBps / self.fio.read_MiBps if self.fio.read_MiBps else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "case": {
                **asdict(self.case),
                "jobs": self.case.jobs,
                "total_bytes": self.case.total_bytes,
            },
            "directory": self.directory,
            "results_dir": self.results_dir,
            "run": {**asdict(self.run), "parity": round(self.run.parity, 3)},
            "fio": {**asdict(self.fio), "parity": round(self.fio.parity, 3)},
            "write_ratio": round(self.write_ratio, 3),
            "read_ratio": round(self.read_ratio, 3),
        }


def _run_side(
    case: ClusterBenchCase, root: Path, results_dir: Path, observer: RunObserver
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
        "output.label": "bench-cluster",
    }
    plan = apply_overrides(load_config(None), overrides)
    (result,) = run_plan(plan, command_line=["benchfs", "bench", "cluster"], observer=observer)
    assert result.summary is not None
    by_phase = {row["phase"]: row for row in result.summary["phases"]}
    return (
        Bandwidths(
            write_MiBps=float(by_phase["write"]["bwMeanMIB"] or 0.0),
            read_MiBps=float(by_phase["read"]["bwMeanMIB"] or 0.0),
        ),
        result.run_dir,
    )


def _fio_side(case: ClusterBenchCase, root: Path) -> Bandwidths:
    common: dict[str, Any] = {
        "bs": case.transfer_size,
        "iodepth": case.queue_depth,
        "size": case.block_size,
        "numjobs": case.jobs,
        "direct": True,
        "ioengine": "io_uring",
    }
    jobs = [
        FioJob(name="cluster_write", rw="write", unlink=False, **common),
        FioJob(name="cluster_read", rw="read", unlink=True, **common),
    ]
    report = run_fio(jobs, root, timeout_s=1800)
    return Bandwidths(
        write_MiBps=report.jobs[0].write.bw_mib_s, read_MiBps=report.jobs[1].read.bw_mib_s
    )


def run_cluster_bench(
    case: ClusterBenchCase,
    *,
    directory: Path | None = None,
    results_dir: Path = Path("results"),
    observer: RunObserver | None = None,
    on_progress: Callable[[str], None] = lambda _: None,
) -> ClusterBenchReport:
    """The local cluster run, then fio, in fresh directories under ``directory``."""
    if directory is not None and not directory.is_dir():
        raise ToolError(f"benchmark directory {directory} does not exist")
    root = Path(tempfile.mkdtemp(prefix="benchfs-bench-cluster-", dir=directory))
    try:
        (root / "run").mkdir()
        (root / "fio").mkdir()
        on_progress(
            f"benchfs run: {case.nodes} daemons, {case.jobs} ranks, "
            f"{format_size(case.total_bytes)} in {format_size(case.transfer_size)} transfers"
        )
        run, run_dir = _run_side(case, root / "run", results_dir, observer or RunObserver())
        on_progress(f"fio: {case.jobs} jobs, the same bytes and block size")
        fio = _fio_side(case, root / "fio")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return ClusterBenchReport(case, str(root.parent), run, fio, str(run_dir))
