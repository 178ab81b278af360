"""The native metadata workload on a local cluster against the same
workload by plain POSIX calls on the daemons' own disk, in one run.

`benchfs run` on the embedded local cluster (4 daemons, one rank per
daemon) runs mdtest's file phases only (``metadata.mode = "only"``, a
directory per rank); then one process per rank does the same items with
``open``/``write``/``close``, ``stat``, ``open``/``read``/``close`` and
``unlink`` in the same parent directory (``benchfs.bench.posix_metadata``).
Reported: the rates of both sides and their ratios per phase. Ratios from
one run are what to compare; absolute figures drift with the machine.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchfs.bench.posix_metadata import PHASES, PosixMetadataCase, run_posix_metadata
from benchfs.config.plan import apply_overrides, load_config
from benchfs.errors import ToolError
from benchfs.run.observer import RunObserver
from benchfs.run.orchestrate import run_plan
from benchfs.workload.metadata_spec import MDTEST_NAMES


@dataclass(frozen=True)
class MetadataBenchCase:
    nodes: int = 4
    items: int = 2000  # files per rank
    write_bytes: int = 0
    read_bytes: int = 0

    @property
    def ranks(self) -> int:
        return self.nodes


@dataclass(frozen=True)
class MetadataBenchReport:
    case: MetadataBenchCase
    directory: str
    run: dict[str, float]  # phase -> ops/s of all ranks
    posix: dict[str, float]
    results_dir: str

    def ratio(self, phase: str) -> float:
        return self.run[phase] / self.posix[phase] if self.posix.get(phase) else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "case": {**asdict(self.case), "ranks": self.case.ranks},
            "directory": self.directory,
            "results_dir": self.results_dir,
            "phases": [
                {
                    "phase": phase,
                    "mdtest_name": MDTEST_NAMES[phase],
                    "run_ops_s": round(self.run[phase], 1),
                    "posix_ops_s": round(self.posix[phase], 1),
                    # Three significant digits: a stat ratio can be 0.003.
                    "ratio": float(f"{self.ratio(phase):.3g}"),
                }
                for phase in PHASES
            ],
        }


def _run_side(
    case: MetadataBenchCase, root: Path, results_dir: Path, observer: RunObserver
) -> tuple[dict[str, float], Path]:
    overrides = {
        "cluster.local_nodes": case.nodes,
        "cluster.data_dir": str(root),
        "workload.tasks_per_node": 1,
        "metadata.mode": "only",
        "metadata.items": case.items,
        "metadata.unique_dir": True,
        "metadata.write_bytes": case.write_bytes,
        "metadata.read_bytes": case.read_bytes,
        "preflight.enabled": False,
        "output.results_dir": str(results_dir),
        "output.label": "bench-metadata",
    }
    plan = apply_overrides(load_config(None), overrides)
    (result,) = run_plan(plan, command_line=["benchfs", "bench", "metadata"], observer=observer)
    assert result.summary is not None
    by_name = {row["phase"]: row for row in result.summary["phases"]}
    rates = {phase: float(by_name[MDTEST_NAMES[phase]]["rate_mean_ops_s"] or 0.0)
             for phase in PHASES}  # fmt: skip
    return rates, result.run_dir


def run_metadata_bench(
    case: MetadataBenchCase,
    *,
    directory: Path | None = None,
    results_dir: Path = Path("results"),
    observer: RunObserver | None = None,
    on_progress: Callable[[str], None] = lambda _: None,
) -> MetadataBenchReport:
    """The local cluster run, then the POSIX loop, in fresh directories under ``directory``."""
    if directory is not None and not directory.is_dir():
        raise ToolError(f"benchmark directory {directory} does not exist")
    root = Path(tempfile.mkdtemp(prefix="benchfs-bench-metadata-", dir=directory))
    try:
        (root / "run").mkdir()
        (root / "posix").mkdir()
        on_progress(
            f"benchfs run: {case.nodes} daemons, {case.ranks} ranks, {case.items} files each"
        )
        run, run_dir = _run_side(case, root / "run", results_dir, observer or RunObserver())
        on_progress(f"POSIX: {case.ranks} processes, {case.items} files each")
        posix = run_posix_metadata(
            PosixMetadataCase(case.ranks, case.items, case.write_bytes, case.read_bytes),
            root / "posix",
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return MetadataBenchReport(case, str(root.parent), run, posix, str(run_dir))
