"""A workload's figure over time: runs with the same workload key, each with
the noise band of its repetitions, and a change marked only where it is
beyond that noise.

Each run's samples are its repetitions' values (bandwidth per repetition,
by default); a run is compared with the previous run of the same key by
``analysis.stats.noise.compare_samples``, the test ``benchfs compare`` uses:
"changed" needs a bootstrap interval that excludes 0 and a rank or Welch
test below 5 %; with one repetition there is no noise estimate.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from analysis.compare import higher_is_better
from analysis.stats import noise
from benchfs.history.model import FigureRow, NodeRun, RunRow

DEFAULT_METRIC = "bwMiB"
# The unit of each per-repetition figure (analysis.compare.REPETITION_METRICS).
UNITS = {"bwMiB": "MiB/s", "iops": "IOPS", "wrRdTime": "s", "first_done_s": "s",
         "last_done_s": "s", "rate_ops_s": "ops/s", "time_s": "s"}  # fmt: skip


def unit(metric: str) -> str:
    return UNITS.get(metric, "us" if metric.endswith("_us") else "")


FIRST = "first run"


@dataclass(frozen=True)
class TrendPoint:
    started_at: str
    label: str
    results_dir: str
    phase: str
    values: tuple[float, ...]
    verdict: str  # against the previous run: changed, within noise, no noise estimate
    direction: str = ""  # better or worse, when changed
    change_pct: float | None = None
    flagged_nodes: tuple[str, ...] = ()

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def spread(self) -> float | None:
        """The repetitions' standard deviation (None with one)."""
        return statistics.stdev(self.values) if len(self.values) > 1 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "started_at": self.started_at,
            "run": self.label,
            "results_dir": self.results_dir,
            "phase": self.phase,
            "repetitions": list(self.values),
            "mean": self.mean,
            "sd": self.spread,
            "change_pct": self.change_pct,
            "verdict": self.verdict,
            "direction": self.direction,
            "flagged_nodes": list(self.flagged_nodes),
        }


@dataclass(frozen=True)
class Trend:
    workload_key: str
    cluster: str
    metric: str
    points: list[TrendPoint] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return len({point.results_dir for point in self.points})

    def to_json(self) -> dict[str, Any]:
        return {
            "workload_key": self.workload_key,
            "cluster": self.cluster,
            "metric": self.metric,
            "runs": self.runs,
            "points": [point.to_json() for point in self.points],
        }


def trends(
    runs: Sequence[tuple[int, RunRow]],
    figures: dict[int, list[FigureRow]],
    node_runs: Sequence[NodeRun] = (),
    *,
    metric: str = DEFAULT_METRIC,
) -> list[Trend]:
    """One trend per (cluster, workload key) with the metric, oldest run first."""
    flagged: dict[int, list[str]] = {}
    for node_run in node_runs:
        if node_run.row.flagged:
            flagged.setdefault(node_run.run_id, []).append(node_run.row.node)
    grouped: dict[tuple[str, str], Trend] = {}
    previous: dict[tuple[str, str, str], tuple[float, ...]] = {}
    for run_id, run in runs:
        samples: dict[str, list[float]] = {}
        for row in figures.get(run_id, []):
            if row.metric == metric:
                samples.setdefault(row.phase, []).append(row.value)
        if not samples:
            continue
        trend = grouped.setdefault(
            (run.cluster, run.workload_key), Trend(run.workload_key, run.cluster, metric)
        )
        for phase, values in samples.items():
            key = (run.cluster, run.workload_key, phase)
            verdict, direction, change = _against(previous.get(key), tuple(values), metric)
            previous[key] = tuple(values)
            trend.points.append(
                TrendPoint(
                    started_at=run.started_at,
                    label=run.label,
                    results_dir=run.results_dir,
                    phase=phase,
                    values=tuple(values),
                    verdict=verdict,
                    direction=direction,
                    change_pct=change,
                    flagged_nodes=tuple(flagged.get(run_id, [])),
                )
            )
    return list(grouped.values())


def _against(
    before: tuple[float, ...] | None, values: tuple[float, ...], metric: str
) -> tuple[str, str, float | None]:
    """(verdict, direction, change in %) of ``values`` against the run before."""
    if before is None:
        return FIRST, "", None
    try:
        result = noise.compare_samples(before, values)
    except ValueError:  # no finite value on a side
        return noise.NOT_POSITIVE, "", None
    direction = ""
    if result.verdict == noise.CHANGED:
        better = (result.change_pct > 0) == higher_is_better(metric)
        direction = "better" if better else "worse"
    change = result.change_pct if math.isfinite(result.change_pct) else None
    return result.verdict, direction, change
