"""BenchFS's own workload ranks (``workload.tool = "builtin"``): IOR-style
data phases and mdtest-style metadata phases (``ranks``), or IO500's
phases (``suite``, with ``suite.name`` and ``suite.tool = "builtin"``), on
any target: the engine's client, the mount, a ``posix:`` directory.

One spec for all ranks (``benchfs.workload.spec``), one MPI job of
``python -m benchfs.node.rank`` (``benchfs.run.workloads.rank_job``),
then the summary of the rows and latencies rank 0 left.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np

from analysis.layout import SUMMARY_FILE
from analysis.manifest import RanksTarget, SuiteRecord
from benchfs.config.model import RunConfig
from benchfs.launchers.base import Launcher
from benchfs.results.atomic import write_json_atomic
from benchfs.results.manifest import ManifestRecorder
from benchfs.run.live.watch import LiveWatch
from benchfs.run.space import fit_block_to_space, fit_suite_to_space
from benchfs.run.workloads.base import (
    Fitted,
    Point,
    RunFailed,
    Summary,
    Workload,
    register_workload,
)
from benchfs.run.workloads.rank_job import ProgressWatch, run_ranks
from benchfs.workload.io500_rank import applied_checks
from benchfs.workload.io500_summary import summarize_suite
from benchfs.workload.metadata_summary import is_metadata_phase, summarize_metadata
from benchfs.workload.spec import WorkloadSpec, run_seed, workload_spec
from benchfs.workload.summary import RankRow, summarize


def read_rank_rows(spec: WorkloadSpec) -> list[RankRow]:
    lines = spec.ranks_file.read_text().splitlines() if spec.ranks_file.is_file() else []
    return [RankRow.model_validate_json(line) for line in lines if line.strip()]


def read_latencies(spec: WorkloadSpec, rows: Sequence[RankRow]) -> dict[tuple[str, int], Any]:
    found: dict[tuple[str, int], Any] = {}
    for phase, repetition in {(row.phase, row.repetition) for row in rows}:
        path = spec.latency_file(phase, repetition)
        if path.is_file():
            found[(phase, repetition)] = np.load(path)
    return found


def file_systems(spec: WorkloadSpec) -> dict[str, Any]:
    """Per host, the file system behind the ranks' directory as they found it."""
    found: dict[str, Any] = {}
    for rank in range(spec.ranks):
        with contextlib.suppress(OSError, ValueError, KeyError):
            started = json.loads(spec.rank_file(rank).read_text())
            found.setdefault(started["host"], started["fs"])
    return found


def write_summary(spec: WorkloadSpec) -> Summary:
    """``workload/summary.json`` from the ranks' rows and latencies."""
    rows = read_rank_rows(spec)
    if not rows:
        raise RunFailed(f"the workload left no per-rank results in {spec.ranks_file}")
    latencies = read_latencies(spec, rows)
    if spec.suite is not None:
        document = summarize_suite(rows, spec, latencies)
        write_json_atomic(Path(spec.workload_dir) / SUMMARY_FILE, document)
        return document
    data_rows = [row for row in rows if not is_metadata_phase(row.phase)]
    summary = summarize(data_rows, spec.parameters(), latencies)
    if not spec.run_data:
        del summary["parameters"]  # IOR's test parameters: no data workload ran
    if spec.metadata is not None:
        workload = spec.metadata
        phases, repetitions = summarize_metadata(rows, workload, latencies)
        summary["phases"] += phases
        summary["repetitions"] += repetitions
        summary["metadata_parameters"] = workload.model_dump()
    write_json_atomic(Path(spec.workload_dir) / SUMMARY_FILE, summary)
    return summary


@register_workload
class RanksWorkload(Workload):
    """The data and metadata phases of ``[workload]`` and ``[metadata]``."""

    name = "ranks"

    def __init__(self) -> None:
        self.spec: WorkloadSpec | None = None
        self.spec_path = Path()

    @classmethod
    def selects(cls, config: RunConfig) -> bool:
        return config.workload.tool == "builtin" and config.suite.name == "none"

    @classmethod
    def plan(cls, config: RunConfig, seed: int) -> Self:
        return cls()

    def fit(self, config: RunConfig, ranks: int, launcher: Launcher) -> Fitted:
        return fit_block_to_space(config, ranks, launcher)

    def prepare(self, point: Point) -> None:
        target, layout = point.target, point.layout
        start = point.record.manifest.start_time.isoformat()
        self.spec = workload_spec(
            point.config,
            hosts=[host.name for host in point.hosts],
            node_names=target.node_names,
            registry_dir=target.registry_dir,
            workload_dir=layout.workload_dir,
            state_dir=point.state_dir,
            trace_dir=layout.traces_dir if target.native else None,
            shm_dir=point.cluster.scratch.shm_dir,
            verify_seed=run_seed(f"{layout.root.resolve()}@{start}"),
            posix_dir=target.posix_dir,
            mount_root=target.mount_root,
            mount_dir_name=None if target.mounts is None else target.work_name,
        )
        self.spec_path = self.spec.write(point.state_dir / "spec.json")
        deadlines = point.config.cluster.deadlines
        point.watches.add(ProgressWatch(self.spec, deadlines, point.observer, layout.workload_log))
        group = point.cluster.group
        hosts = {} if group is None else {slot.node_name: slot.host.name for slot in group.slots}
        point.watches.add(
            LiveWatch(
                self.spec,
                point.config.live,
                daemons=target.posix_dir is None,
                observer=point.observer,
                layout=layout,
                record=point.record,
                on_exclude=point.on_exclude,
                hosts=hosts,
                devices=None if point.iostat is None else point.iostat.report_so_far,
            )
        )

    def run(self, point: Point) -> None:
        assert self.spec is not None
        run_ranks(point, self.spec, self.spec_path, on_command=point.record.ranks_command)

    def summarise(self, point: Point) -> Summary:
        assert self.spec is not None
        return write_summary(self.spec)

    def check(self, summary: Summary) -> None:
        problems = []
        if summary["errors"]:
            problems.append(f"{summary['errors']} I/O errors")
        if summary["verify_errors"]:
            problems.append(f"{summary['verify_errors']} verification errors")
        if problems:
            raise RunFailed(f"the workload reported {' and '.join(problems)}")

    def partial_summary(self, point: Point) -> tuple[Summary | None, list[str]]:
        """The summary of the phases that finished before a failure (the
        report is made from it); a note when there is none."""
        if self.spec is None:
            return None, []
        try:
            summary = write_summary(self.spec)
        except Exception as error:  # no phase finished, or its rows are unreadable
            return None, [f"no summary of finished phases: {error}"]
        done = len(summary["repetitions"])
        return summary, [
            f"the summary and report cover what finished before the failure: {done} phase runs"
        ]

    def record(self, point: Point) -> None:
        """The file systems the ranks found: the mount's on every host, or the
        posix: target's with its directory."""
        spec, target = self.spec, point.target
        if spec is None:
            return
        if target.mounts is not None:
            found = file_systems(spec)
            point.record.mount(target.mounts.record().model_copy(update={"file_systems": found}))
        if spec.posix_dir is not None:
            found = file_systems(spec)
            point.record.target(RanksTarget(target=spec.target, directory=spec.posix_dir,
                                            direct=spec.direct, file_systems=found))  # fmt: skip

    def clean_up(self, point: Point) -> list[str]:
        spec = self.spec
        if spec is None or spec.posix_dir is None:
            return []
        if point.launcher.capabilities.runs_here and not point.config.workload.keep_files:
            # The ranks' own cleanup, after a failure too.
            shutil.rmtree(spec.posix_dir, ignore_errors=True)
        return []


def suite_record(config: RunConfig) -> SuiteRecord:
    """The manifest's suite: its sizes and the checks its phases apply."""
    checks = applied_checks(config.suite.tool, config.workload.mounted)
    return SuiteRecord(**config.suite.sizes().model_dump(), checks=checks)


class SuiteMode:
    """What the modes of the IO500 suite share: the suite in the manifest, and
    its sizes fitted to the free space."""

    def record_plan(self, record: ManifestRecorder, config: RunConfig) -> None:
        record.suite(suite_record(config))

    def fit(self, config: RunConfig, ranks: int, launcher: Launcher) -> Fitted:
        return fit_suite_to_space(config, ranks, launcher)


@register_workload
class SuiteRanksWorkload(SuiteMode, RanksWorkload):
    """IO500's phases by BenchFS's own ranks (``suite.tool = "builtin"``)."""

    name = "suite"

    @classmethod
    def selects(cls, config: RunConfig) -> bool:
        return config.suite.name != "none" and config.suite.tool == "builtin"
