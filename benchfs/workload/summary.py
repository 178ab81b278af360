"""The workload summary, computed the way IOR computes it.

Pure functions over per-rank rows (one per rank, repetition and phase, as
written to ``workload/ranks.jsonl``) and the merged per-op latencies.

- Bandwidth of a repetition is IOR's: all bytes moved by all ranks over the
  span from the first rank's start to the last rank's end.
- Per phase, over the repetitions: ``bwMaxMIB``, ``bwMinMIB``, ``bwMeanMIB``,
  ``bwStdMIB`` (population standard deviation, as IOR), ``OPsMax`` ...
  ``OPsSD``, ``MeanTime``, ``xsizeMiB`` (bytes moved per repetition).
- Beside them: when the first and the last rank finished (seconds from the
  phase start; a large gap means stragglers) and latency percentiles over
  every op of the phase (``p50_us`` ... ``p99.9_us``), and ``queue_depth``
  (transfers in flight per rank: IOR has no such setting, its POSIX backend
  always keeps one, so it has its own name).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, computed_field

from analysis.phases import LATENCY_KEYS, Provenance
from analysis.phases import latency_figures as phase_latency
from benchfs import __version__

MiB = 1024 * 1024
KiB = 1024
NS_PER_S = 1_000_000_000
SUMMARY_VERSION = 1
API_NAME = "BENCHFS"
POSIX_API_NAME = "POSIX"


class RankRow(BaseModel):
    """One rank's figures for one phase of one repetition, as ``ranks.jsonl`` holds
    it: ``model_dump()`` adds ``elapsed_s`` and leaves out a ``found`` that is None
    (only find has it); ``model_validate`` reads a row back, ignoring what is not
    its own."""

    model_config = ConfigDict(frozen=True)

    repetition: int
    phase: str
    rank: int
    host: str
    bytes: int
    ops: int
    start_unix_ns: int
    end_unix_ns: int
    errors: int = 0
    verify_errors: int = 0
    stonewalled: bool = False
    stonewall_ops: int | None = None
    # The engine's data phases: opening the file, its first RPCs (mkdir of its
    # directory, create or open).
    open_s: float | None = Field(default=None, exclude_if=lambda open_s: open_s is None)
    # find (the IO500 suite): the files of the scan that matched its criteria.
    found: int | None = Field(default=None, exclude_if=lambda found: found is None)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def elapsed_s(self) -> float:
        return (self.end_unix_ns - self.start_unix_ns) / NS_PER_S


@dataclass(frozen=True)
class WorkloadParameters:
    """What IOR prints beside its summary: the shape of the test."""

    api: str
    transfer_size: int
    block_size: int
    segments: int
    tasks: int
    tasks_per_node: int
    repetitions: int
    file_per_process: bool
    reorder_tasks: bool
    task_per_node_offset: int = 1
    stonewall_s: float = 0.0
    verify: bool = False
    # Transfers in flight per rank; IOR's POSIX backend has no such setting (always 1).
    queue_depth: int = 1
    # The data pattern's seed of each repetition (written and verified).
    verify_seeds: tuple[int, ...] = ()
    # "benchfs" or "posix:PATH": what the workload ran against.
    target: str = "benchfs"
    # "native" (the engine's client) or "mount" (POSIX calls on BenchFS's FUSE mount).
    interface: str = "native"

    @property
    def posix_calls(self) -> bool:
        """The ranks made POSIX calls (a posix: target, or the mount)."""
        return self.target.startswith("posix:") or self.interface == "mount"

    def ior_fields(self) -> dict[str, Any]:
        """IOR's own names for the test parameters (its JSON ``summary`` keys)."""
        return {
            # IOR's meaning: the I/O interface (POSIX calls on a posix: target or the mount).
            "API": POSIX_API_NAME if self.posix_calls else API_NAME,
            "TestID": 0,
            "ReferenceNumber": 0,
            "segmentCount": self.segments,
            "blockSize": self.block_size,
            "transferSize": self.transfer_size,
            "numTasks": self.tasks,
            "tasksPerNode": self.tasks_per_node,
            "repetitions": self.repetitions,
            "filePerProc": int(self.file_per_process),
            "reorderTasks": int(self.reorder_tasks),
            "taskPerNodeOffset": self.task_per_node_offset,
            "reorderTasksRandom": 0,
            "reorderTasksRandomSeed": 0,
        }


@dataclass(frozen=True)
class RepetitionResult:
    """One phase of one repetition over all ranks."""

    phase: str
    repetition: int
    ranks: int
    bytes: int
    ops: int
    start_unix_ns: int
    end_unix_ns: int
    first_done_s: float
    last_done_s: float
    errors: int
    verify_errors: int
    stonewalled: bool

    @property
    def span_s(self) -> float:
        """First rank's start to last rank's end: the time IOR divides by."""
        return (self.end_unix_ns - self.start_unix_ns) / NS_PER_S

    @property
    def bw_mib_s(self) -> float | None:
        span = self.span_s
        return self.bytes / MiB / span if span > 0 else None

    @property
    def ops_per_s(self) -> float | None:
        span = self.span_s
        return self.ops / span if span > 0 else None


def repetition_result(rows: Sequence[RankRow]) -> RepetitionResult:
    """Combine the ranks of one phase and repetition (IOR's bandwidth arithmetic)."""
    if not rows:
        raise ValueError("no rank rows to summarize")
    keys = {(row.phase, row.repetition) for row in rows}
    if len(keys) != 1:
        raise ValueError(f"rows of several phases or repetitions: {sorted(keys)}")
    phase, repetition = keys.pop()
    start = min(row.start_unix_ns for row in rows)
    end = max(row.end_unix_ns for row in rows)
    ends = [row.end_unix_ns for row in rows]
    return RepetitionResult(
        phase=phase,
        repetition=repetition,
        ranks=len(rows),
        bytes=sum(row.bytes for row in rows),
        ops=sum(row.ops for row in rows),
        start_unix_ns=start,
        end_unix_ns=end,
        first_done_s=(min(ends) - start) / NS_PER_S,
        last_done_s=(max(ends) - start) / NS_PER_S,
        errors=sum(row.errors for row in rows),
        verify_errors=sum(row.verify_errors for row in rows),
        stonewalled=any(row.stonewalled for row in rows),
    )


def latency_figures(latency_ns: npt.NDArray[np.uint64] | None) -> dict[str, float | None]:
    """min, mean, p50, p90, p99, p99.9 and max in microseconds (nearest rank)."""
    figures = None if latency_ns is None else phase_latency(latency_ns / 1000.0)
    if figures is None:
        return dict.fromkeys(LATENCY_KEYS)
    row = figures.to_row()
    return {key: row[key] for key in LATENCY_KEYS}


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _population_std(values: Sequence[float]) -> float | None:
    return statistics.pstdev(values) if values else None


def repetition_row(
    result: RepetitionResult,
    parameters: WorkloadParameters,
    latency_ns: npt.NDArray[np.uint64] | None = None,
) -> dict[str, Any]:
    """One entry of IOR's per-repetition ``Results`` (its names), plus ours."""
    latency = latency_figures(latency_ns)
    mean_latency = latency["mean_us"]
    return {
        "phase": result.phase,
        "repetition": result.repetition,
        "access": result.phase,
        "bwMiB": result.bw_mib_s,
        "blockKiB": parameters.block_size / KiB,
        "xferKiB": parameters.transfer_size / KiB,
        "iops": result.ops_per_s,
        "latency": None if mean_latency is None else mean_latency / 1e6,
        "wrRdTime": result.span_s,
        "totalTime": result.span_s,
        "bytes": result.bytes,
        "ops": result.ops,
        "ranks": result.ranks,
        "first_done_s": result.first_done_s,
        "last_done_s": result.last_done_s,
        "errors": result.errors,
        "verify_errors": result.verify_errors,
        "stonewalled": result.stonewalled,
        **latency,
    }


def phase_row(
    phase: str,
    results: Sequence[RepetitionResult],
    parameters: WorkloadParameters,
    latency_ns: npt.NDArray[np.uint64] | None = None,
) -> dict[str, Any]:
    """IOR's summary line of one operation over its repetitions, plus
    first-done/last-done times and latency percentiles of every op."""
    if not results:
        raise ValueError(f"phase {phase}: no repetitions to summarize")
    bandwidths = [bw for bw in (r.bw_mib_s for r in results) if bw is not None]
    rates = [rate for rate in (r.ops_per_s for r in results) if rate is not None]
    return {
        "phase": phase,
        **provenance(parameters).fields(),
        "operation": phase,
        **parameters.ior_fields(),
        "target": parameters.target,
        "interface": parameters.interface,
        "bwMaxMIB": max(bandwidths, default=None),
        "bwMinMIB": min(bandwidths, default=None),
        "bwMeanMIB": _mean(bandwidths),
        "bwStdMIB": _population_std(bandwidths),
        "OPsMax": max(rates, default=None),
        "OPsMin": min(rates, default=None),
        "OPsMean": _mean(rates),
        "OPsSD": _population_std(rates),
        "MeanTime": _mean([r.span_s for r in results]),
        "xsizeMiB": _mean([r.bytes / MiB for r in results]),
        "first_done_s": _mean([r.first_done_s for r in results]),
        "last_done_s": _mean([r.last_done_s for r in results]),
        "bytes": sum(r.bytes for r in results),
        "ops": sum(r.ops for r in results),
        "errors": sum(r.errors for r in results),
        "verify_errors": sum(r.verify_errors for r in results),
        "stonewalled": any(r.stonewalled for r in results),
        **latency_figures(latency_ns),
    }


def provenance(parameters: WorkloadParameters) -> Provenance:
    """What the phase rows say about where they came from (docs/RUN.md)."""
    return Provenance(
        tool="benchfs",
        tool_version=__version__,
        kind="data",
        queue_depth=parameters.queue_depth,
        access="file-per-process" if parameters.file_per_process else "single-shared-file",
        ordering="sequential",
    )


def summarize(
    rows: Iterable[RankRow],
    parameters: WorkloadParameters,
    latencies: Mapping[tuple[str, int], npt.NDArray[np.uint64]] | None = None,
) -> dict[str, Any]:
    """The whole ``workload/summary.json``: phase rows in the order the phases
    ran, per-repetition rows, and the test parameters.

    ``latencies`` maps (phase, repetition) to that repetition's per-op
    latencies in ns (all ranks); missing keys leave the percentiles null.
    """
    latencies = latencies or {}
    grouped: dict[tuple[str, int], list[RankRow]] = {}
    for row in rows:
        grouped.setdefault((row.phase, row.repetition), []).append(row)
    phases: list[str] = []
    for phase, _ in grouped:
        if phase not in phases:
            phases.append(phase)
    phase_rows: list[dict[str, Any]] = []
    repetition_rows: list[dict[str, Any]] = []
    for phase in phases:
        keys = sorted(key for key in grouped if key[0] == phase)
        results = [repetition_result(grouped[key]) for key in keys]
        repetition_rows += [
            repetition_row(result, parameters, latencies.get(key))
            for key, result in zip(keys, results, strict=True)
        ]
        merged = [latencies[key] for key in keys if key in latencies]
        phase_rows.append(
            phase_row(phase, results, parameters, np.concatenate(merged) if merged else None)
        )
    return {
        "summary_version": SUMMARY_VERSION,
        "parameters": {
            **parameters.ior_fields(),
            "access": "file-per-process" if parameters.file_per_process else "single-shared-file",
            "stonewall_s": parameters.stonewall_s,
            "verify": parameters.verify,
            "queue_depth": parameters.queue_depth,
            "verify_seeds": list(parameters.verify_seeds),
            "target": parameters.target,
            "interface": parameters.interface,
        },
        "phases": phase_rows,
        "repetitions": repetition_rows,
        "errors": sum(int(row["errors"]) for row in phase_rows),
        "verify_errors": sum(int(row["verify_errors"]) for row in phase_rows),
    }
