"""The metadata workload three ways on one machine's disk, in one command:
BenchFS through the engine's client, BenchFS through its FUSE mount, and
plain POSIX calls on the disk itself; and, when mdtest is found, a fourth:
the real mdtest through the same mount (``benchfs.bench.metadata_mdtest``).

Each side is a `benchfs run` with mdtest's directory and file phases (or
one of the two: ``kind``) and nothing else (``metadata.mode = "only"``, a
directory per rank, one item at a time per rank, ``nodes`` ranks): on the
embedded local cluster (``nodes`` daemons)
with the native client, the same cluster through the mount
(``workload.interface = "mount"``), and a ``posix:`` target in the same
parent directory, where the engine's loop does ``mkdir``, ``statx`` and
``rmdir``, then ``open``/``write``/``close``, ``statx``,
``open``/``read``/``close`` and ``unlink`` (no daemons). The same
harness, rank processes and per-item loop on all three, so the ratios are
the file system's. The mdtest side is mdtest's own loop on the same mount,
ranks and items: built-in mount / mdtest is what the harness costs or saves
against the figure other file systems publish. Ratios from one command are
what to compare; absolute figures drift with the machine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchfs.bench.metadata_mdtest import (
    NOT_ASKED,
    MdtestChoice,
    mdtest_args,
    mdtest_overrides,
)
from benchfs.bench.scope import bench_scope
from benchfs.config.plan import apply_overrides, load_config
from benchfs.errors import ToolError
from benchfs.run.observer import RunObserver
from benchfs.run.orchestrate import run_plan
from benchfs.workload.metadata_spec import ITEM_KINDS, MDTEST_DIR_NAMES, MDTEST_NAMES


def bench_phases(kind: str) -> list[tuple[str, str, str]]:
    """(item kind, engine phase, mdtest's name) of every item phase, in
    mdtest's order; no rename (BenchFS refuses a directory's), no tree phases
    (one directory per rank here)."""
    names = {"dir": MDTEST_DIR_NAMES, "file": MDTEST_NAMES}
    return [(k, p, name) for k in ITEM_KINDS[kind] for p, name in names[k].items() if p != "rename"]


@dataclass(frozen=True)
class MetadataBenchCase:
    nodes: int = 4
    items: int = 2000  # files (and directories) per rank
    ranks_per_node: int = 1
    kind: str = "both"  # metadata.kind: files, dirs or both
    write_bytes: int = 0
    read_bytes: int = 0
    mount: bool = True  # the third side, through the FUSE mount
    mdtest: MdtestChoice = NOT_ASKED  # the fourth side: mdtest through the mount
    # The mount's attribute and entry caches (mount.attr_timeout_s and
    # mount.entry_timeout_s) on the mount sides; 0: strict, the default.
    mount_cache_s: float = 0.0

    @property
    def ranks(self) -> int:
        return self.nodes * self.ranks_per_node


@dataclass(frozen=True)
class MetadataBenchReport:
    case: MetadataBenchCase
    directory: str
    run: dict[str, float]  # mdtest's phase name -> ops/s of all ranks, native client
    posix: dict[str, float]  # plain POSIX calls on the disk
    mount: dict[str, float] | None  # through the mount; None: not run
    results_dirs: dict[str, str]  # side -> its run's results directory
    mdtest: dict[str, float] | None = None  # mdtest through the mount; None: not run

    def ratio(self, side: Mapping[str, float] | None, phase: str) -> float | None:
        return _ratio(side, self.posix, phase)

    def mdtest_ratio(self, phase: str) -> float | None:
        """The built-in ranks through the mount over mdtest through it."""
        return None if self.mdtest is None else _ratio(self.mount, self.mdtest, phase)

    @property
    def mdtest_args(self) -> list[str]:
        """What benchfs passed mdtest (the run adds ``-d`` on the mount)."""
        case = self.case
        return mdtest_args(case.items, case.kind, case.write_bytes, case.read_bytes)

    def to_json(self) -> dict[str, Any]:
        def rounded(value: float | None, digits: str) -> float | None:
            # Three significant digits for a ratio: a stat ratio can be 0.003.
            return None if value is None else float(f"{value:{digits}}")

        case = asdict(self.case)
        del case["mdtest"]  # under "mdtest", with what it ran
        return {
            "case": {**case, "ranks": self.case.ranks},
            "directory": self.directory,
            "results_dirs": self.results_dirs,
            "mdtest": {
                "ran": self.mdtest is not None,
                "binary": self.case.mdtest.binary,
                "args": None if self.mdtest is None else self.mdtest_args,
                "results_dir": self.results_dirs.get("mdtest"),
                "skipped": self.case.mdtest.skipped,
            },
            "phases": [
                {
                    "phase": phase,
                    "object": item_kind,
                    "mdtest_name": name,
                    "run_ops_s": round(self.run[name], 1),
                    "mount_ops_s": None if self.mount is None else round(self.mount[name], 1),
                    "posix_ops_s": round(self.posix[name], 1),
                    "ratio": rounded(self.ratio(self.run, name), ".3g"),
                    "mount_ratio": rounded(self.ratio(self.mount, name), ".3g"),
                    "mdtest_ops_s": None if self.mdtest is None else round(self.mdtest[name], 1),
                    "mount_mdtest_ratio": rounded(self.mdtest_ratio(name), ".3g"),
                }
                for item_kind, phase, name in bench_phases(self.case.kind)
            ],
        }


def _ratio(side: Mapping[str, float] | None, to: Mapping[str, float], phase: str) -> float | None:
    if side is None:
        return None
    return side[phase] / to[phase] if to.get(phase) else 0.0


def _run_side(
    case: MetadataBenchCase,
    side: str,
    root: Path,
    results_dir: Path,
    observer: RunObserver,
    extra: Mapping[str, Any],
) -> tuple[dict[str, float], Path]:
    overrides = {
        "cluster.local_nodes": case.nodes,
        "cluster.data_dir": str(root / "data"),
        "workload.tasks_per_node": case.ranks_per_node,
        "metadata.mode": "only",
        "metadata.items": case.items,
        "metadata.kind": case.kind,
        "metadata.unique_dir": True,
        "metadata.write_bytes": case.write_bytes,
        "metadata.read_bytes": case.read_bytes,
        "preflight.enabled": False,
        "output.results_dir": str(results_dir),
        "output.label": f"bench-metadata-{side}",
        **extra,
    }
    plan = apply_overrides(load_config(None), overrides)
    (result,) = run_plan(plan, command_line=["benchfs", "bench", "metadata"], observer=observer)
    assert result.summary is not None
    by_name = {row["phase"]: row for row in result.summary["phases"]}
    missing = [name for _, _, name in bench_phases(case.kind) if name not in by_name]
    if missing:  # mdtest leaves out a phase it did not run
        raise ToolError(f"the {side} run has no {missing[0]!r} phase: see {result.run_dir}")
    rates = {name: float(by_name[name]["rate_mean_ops_s"] or 0.0)
             for _, _, name in bench_phases(case.kind)}  # fmt: skip
    return rates, result.run_dir


def run_metadata_bench(
    case: MetadataBenchCase,
    *,
    directory: Path | None = None,
    results_dir: Path = Path("results"),
    observer: RunObserver | None = None,
    on_progress: Callable[[str], None] = lambda _: None,
) -> MetadataBenchReport:
    """The three runs (four with mdtest), in fresh directories under ``directory``."""
    observer = observer or RunObserver()
    rates: dict[str, dict[str, float]] = {}
    run_dirs: dict[str, str] = {}
    with bench_scope(directory, "benchfs-bench-metadata-") as (_, root):
        sides: dict[str, Mapping[str, Any]] = {"native": {}}
        cache = {
            "mount.attr_timeout_s": case.mount_cache_s,
            "mount.entry_timeout_s": case.mount_cache_s,
        }
        if case.mount:
            sides["mount"] = {"workload.interface": "mount", **cache}
        if case.mdtest.binary is not None:
            sides["mdtest"] = {
                **mdtest_overrides(
                    case.mdtest.binary, case.items, case.kind, case.write_bytes, case.read_bytes
                ),
                **cache,
            }
        (root / "data").mkdir(mode=0o700)
        (root / "disk").mkdir(mode=0o700)
        sides["posix"] = {"workload.target": f"posix:{root / 'disk'}"}
        for side, extra in sides.items():
            on_progress(f"benchfs run ({side}): {case.ranks} ranks, {case.items} items each")
            rates[side], run_dir = _run_side(case, side, root, results_dir, observer, extra)
            run_dirs[side] = str(run_dir)
    return MetadataBenchReport(
        case,
        str(root.parent),
        rates["native"],
        rates["posix"],
        rates.get("mount"),
        run_dirs,
        rates.get("mdtest"),
    )
