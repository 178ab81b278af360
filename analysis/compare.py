"""Compare two runs, or two sweeps point by point: per phase and metric, the
change from A to B and whether it is beyond run-to-run variation
(``analysis.stats.noise``), and what was configured differently.

The samples of a workload metric are its per-repetition values from
``workload/summary.json``; A and B are their means. Figures that exist once
per run (trace statistics, error totals) are shown with their change but no
verdict: one value per run carries no noise estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from analysis.errors import MissingDataError
from analysis.loaders.run import RunData, flatten
from analysis.phases import DATA_SKIP
from analysis.stats import noise
from analysis.stats.overview import TraceStats, trace_stats

WORKLOAD_METRICS = ("bwMaxMIB", "bwMinMIB", "bwMeanMIB", "OPsMean", "MeanTime")
# The figures of a metadata phase (analysis.phases.MetadataPhase), first in its rows.
METADATA_METRICS = ("rate_max_ops_s", "rate_min_ops_s", "rate_mean_ops_s", "time_mean_s")
LATENCY_METRICS = ("mean_ms", "p50_ms", "p99_ms", "p99.9_ms", "max_ms")
# (metric as the phase summary names it, the per-repetition column it is the mean of);
# the last two are a native metadata phase's (rate and time of each repetition).
REPETITION_METRICS = (
    ("bwMeanMIB", "bwMiB"), ("OPsMean", "iops"), ("MeanTime", "wrRdTime"),
    ("mean_us", "mean_us"), ("p50_us", "p50_us"), ("p90_us", "p90_us"),
    ("p99_us", "p99_us"), ("p99.9_us", "p99.9_us"),
    ("first_done_s", "first_done_s"), ("last_done_s", "last_done_s"),
    ("rate_mean_ops_s", "rate_ops_s"), ("time_mean_s", "time_s"),
    ("io500_rate", "io500_rate"),
)  # fmt: skip
# A suite's score and its two groups (analysis.io500): once per run.
SUITE_METRICS = (("score", "score"), ("bandwidth", "bandwidth_GiB_s"),
                 ("metadata", "metadata_kIOPS"))  # fmt: skip
SUITE_PHASE = "suite score"
# Phase totals shown beside the tested metrics of a run with repetitions.
PHASE_TOTALS = ("errors", "verify_errors")
NO_ESTIMATE_RUN = "no noise estimate (one value per run)"
METRIC_COLUMNS = [
    "phase", "metric", "A", "B", "change_pct", "ci_low_pct", "ci_high_pct", "p_value",
    "verdict", "direction", "n_A", "n_B", "reps_needed", "test",
]  # fmt: skip
# Keys that differ between any two runs and say nothing about the setup.
_VOLATILE_KEYS = ("start", "end", "time", "pid", "timestamp")
_HIGHER_IS_BETTER = ("bw", "OPs", "iops", "rate", "io500_rate", "score", "bandwidth", "metadata")


@dataclass(frozen=True)
class Method:
    """How every verdict of a comparison was reached; printed with it."""

    confidence: float = noise.CONFIDENCE
    resamples: int = noise.RESAMPLES
    seed: int = noise.SEED
    power: float = noise.POWER

    def describe(self) -> list[str]:
        level = f"{self.confidence:.0%}"
        alpha = f"{1 - self.confidence:.2g}"
        return [
            "Samples: one value per repetition (its bandwidth, its p50 or p99 latency, ...); "
            "A and B are their means. Individual transfers are not samples: they share "
            "their repetition's state and are not independent runs.",
            f"Interval: {level} bootstrap confidence interval of the change of the means "
            f"({self.resamples:,} resamples of each run's repetitions, seed {self.seed}), "
            "widened to Welch's t width for small samples (expanded percentile).",
            f"Test: exact two-sided Mann-Whitney U where the repetitions let it reach "
            f"p < {alpha} ({_rank_minimum(self.confidence)} or more per run), "
            "else Welch's t test on the log values.",
            f"Verdict: 'changed' when p < {alpha} and the interval excludes 0, else "
            "'within noise'; with 1 repetition in a run there is no noise estimate.",
            f"Repetitions needed: per run, for {self.power:.0%} power to resolve the observed "
            f"change at {level}, from the observed spread (an estimate).",
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "confidence": self.confidence,
            "interval": "bootstrap, expanded percentile, change of the means (%)",
            "resamples": self.resamples,
            "seed": self.seed,
            "tests": [noise.MANN_WHITNEY, noise.MANN_WHITNEY_NORMAL, noise.WELCH_LOG],
            "rank_test_minimum_repetitions": _rank_minimum(self.confidence),
            "power_for_reps_needed": self.power,
            "description": self.describe(),
        }


@dataclass(frozen=True)
class Comparison:
    metrics: pd.DataFrame  # METRIC_COLUMNS (a "point" column first for sweeps)
    config_diff: pd.DataFrame  # key, A, B (and "point" for sweeps)
    method: Method = field(default_factory=Method)
    samples: pd.DataFrame = field(default_factory=pd.DataFrame)  # phase, metric, run, value
    notes: list[str] = field(default_factory=list)

    def tested(self) -> int:
        """Rows that got a verdict ('changed' or 'within noise')."""
        verdicts = self.metrics["verdict"]
        return int(verdicts.isin([noise.CHANGED, noise.WITHIN_NOISE]).sum())

    def changed(self) -> pd.DataFrame:
        return self.metrics[self.metrics["verdict"] == noise.CHANGED]

    def chance_note(self) -> str:
        """How many 'changed' rows chance alone would give between equal runs."""
        tested = self.tested()
        alpha = 1 - self.method.confidence
        return (
            f"{tested} rows tested at {self.method.confidence:.0%}: between two runs of one "
            f"setup each row can read 'changed' by chance with a probability of up to "
            f"{alpha:.0%}, about {tested * alpha:.1f} rows in all."
        )


def compare_runs(
    a: RunData,
    b: RunData,
    *,
    stats_a: TraceStats | None = None,
    stats_b: TraceStats | None = None,
    method: Method | None = None,
) -> Comparison:
    """B against A per phase and metric, with a noise verdict, and the differing config keys."""
    method = method or Method()
    if stats_a is None and a.traces is not None:
        stats_a = trace_stats(a.traces)
    if stats_b is None and b.traces is not None:
        stats_b = trace_stats(b.traces)
    rows, samples = _workload_rows(a, b, method)
    if a.suite is not None and b.suite is not None:
        rows += [_one_value_row(SUITE_PHASE, metric, float(a.suite[key]), float(b.suite[key]))
                 for key, metric in SUITE_METRICS]  # fmt: skip
    rows += [_one_value_row(*row) for row in _trace_rows(stats_a, stats_b)]
    metrics = pd.DataFrame(rows, columns=METRIC_COLUMNS)
    metrics = metrics.astype({"n_A": "Int64", "n_B": "Int64", "reps_needed": "Int64"})
    return Comparison(
        metrics=metrics,
        config_diff=config_diff(a.config, b.config),
        method=method,
        samples=pd.DataFrame(samples, columns=["phase", "metric", "run", "value"]),
        notes=[*_validity_note("A", a), *_validity_note("B", b)],
    )


def _validity_note(side: str, run: RunData) -> list[str]:
    """A suite whose result is not a valid IO500 result, and why."""
    if run.suite is None or run.suite.get("valid") is not False:
        return []
    reasons = "; ".join(run.suite.get("invalid_reasons") or [])
    return [f"{side} ({run.label}): its score is not a valid IO500 result: {reasons}"]


def compare_sets(
    runs_a: Sequence[RunData], runs_b: Sequence[RunData], *, method: Method | None = None
) -> Comparison:
    """Two sweeps point by point: points are matched by their swept values
    (the label for runs outside a sweep); unmatched points are named in the notes."""
    method = method or Method()
    points_a, points_b = _points(runs_a, "A"), _points(runs_b, "B")
    shared = [name for name in points_a if name in points_b]
    if not shared:
        raise MissingDataError(
            f"no sweep point in common: A has {', '.join(points_a) or 'none'}; "
            f"B has {', '.join(points_b) or 'none'}"
        )
    parts = [compare_runs(points_a[name], points_b[name], method=method) for name in shared]
    notes = [f"only in {side}: {name}" for side, own, other in (("A", points_a, points_b),
             ("B", points_b, points_a)) for name in own if name not in other]  # fmt: skip
    return Comparison(
        metrics=_with_point(shared, [part.metrics for part in parts]),
        config_diff=_with_point(shared, [part.config_diff for part in parts]),
        method=method,
        samples=_with_point(shared, [part.samples for part in parts]),
        notes=notes,
    )


def point_name(run: RunData) -> str:
    """A sweep point by its swept values ("workload.transfer_size=65536"), else the label."""
    sweep = run.sweep
    if sweep is not None and sweep.values:
        return ", ".join(f"{key}={value}" for key, value in sweep.values.items())
    return run.label


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    """The comparison as plain JSON data (NaN as null, the interval as a pair)."""
    rows = []
    for record in comparison.metrics.to_dict("records"):
        row = {str(key): _plain(value) for key, value in record.items()}
        row["ci_pct"] = [row.pop("ci_low_pct"), row.pop("ci_high_pct")]
        row["confidence"] = comparison.method.confidence
        rows.append(row)
    return {
        "method": comparison.method.to_json(),
        "metrics": rows,
        "tested": comparison.tested(),
        "changed": len(comparison.changed()),
        "chance_note": comparison.chance_note(),
        "config_diff": [
            {str(k): _plain(v) for k, v in r.items()}
            for r in comparison.config_diff.to_dict("records")
        ],
        "notes": comparison.notes,
    }


def config_diff(a: dict[str, Any], b: dict[str, Any]) -> pd.DataFrame:
    """Keys of the effective configs whose values differ (absent shown as '-')."""
    flat_a, flat_b = flatten(a), flatten(b)
    rows = []
    for key in sorted(set(flat_a) | set(flat_b)):
        if any(word in key.lower() for word in _VOLATILE_KEYS):
            continue
        value_a, value_b = flat_a.get(key, "-"), flat_b.get(key, "-")
        if value_a != value_b:
            rows.append((key, str(value_a), str(value_b)))
    return pd.DataFrame(rows, columns=["key", "A", "B"])


Row = tuple[Any, ...]
SampleRow = tuple[str, str, str, float]


def _workload_rows(a: RunData, b: RunData, method: Method) -> tuple[list[Row], list[SampleRow]]:
    """Per-repetition metrics where both runs have repetition rows, else the phase rows
    as single values (IOR's main figures first, then every other numeric column)."""
    if a.repetitions is None or b.repetitions is None:
        return [_sample_row(phase, metric, [x], [y], method)
                for phase, metric, x, y in _phase_values(a.workload, b.workload)], []  # fmt: skip
    rows: list[Row] = []
    samples: list[SampleRow] = []
    phases_b = set(b.workload["phase"].astype(str))
    for phase in [str(p) for p in a.workload["phase"] if str(p) in phases_b]:
        reps_a = a.repetitions[a.repetitions["phase"].astype(str) == phase]
        reps_b = b.repetitions[b.repetitions["phase"].astype(str) == phase]
        for metric, column in REPETITION_METRICS:
            if column not in reps_a.columns or column not in reps_b.columns:
                continue
            values_a, values_b = _numbers(reps_a[column]), _numbers(reps_b[column])
            if not values_a and not values_b:
                continue
            if not values_a or not values_b:
                # One side's target could not run the phase (a directory rename
                # on BenchFS): shown beside the other's figure, not tested.
                rows.append(_one_value_row(phase, metric, _mean(values_a), _mean(values_b)))
                continue
            rows.append(_sample_row(phase, metric, values_a, values_b, method))
            samples += [(phase, metric, run, value)
                        for run, values in (("A", values_a), ("B", values_b))
                        for value in values]  # fmt: skip
        totals = _phase_values(
            a.workload[a.workload["phase"].astype(str) == phase],
            b.workload[b.workload["phase"].astype(str) == phase],
            only=PHASE_TOTALS,
        )
        rows += [_one_value_row(*row) for row in totals]
    return rows, samples


def _sample_row(phase: str, metric: str, a: list[float], b: list[float], method: Method) -> Row:
    try:
        result = noise.compare_samples(
            a, b, confidence=method.confidence, resamples=method.resamples, seed=method.seed
        )
    except ValueError:  # no finite value on a side
        return _one_value_row(phase, metric, math.nan, math.nan)
    direction = ""
    if result.verdict == noise.CHANGED:
        better = (result.change_pct > 0) == higher_is_better(metric)
        direction = "better" if better else "worse"
    return (
        phase, metric, result.mean_a, result.mean_b, result.change_pct, result.ci_low_pct,
        result.ci_high_pct, result.p_value, result.verdict, direction, result.n_a, result.n_b,
        result.reps_needed, result.test,
    )  # fmt: skip


def _one_value_row(phase: str, metric: str, a: float, b: float) -> Row:
    return (phase, metric, a, b, _change(a, b), math.nan, math.nan, math.nan,
            NO_ESTIMATE_RUN, "", 1, 1, None, "")  # fmt: skip


def _phase_values(
    a: pd.DataFrame, b: pd.DataFrame, only: Sequence[str] | None = None
) -> list[tuple[str, str, float, float]]:
    """(phase, metric, A, B) of the phase rows: IOR's main figures first, then every
    other numeric column both have (or just the columns ``only`` names)."""
    if only is not None:
        metrics = [column for column in only if column in a.columns and column in b.columns]
    else:
        others = [
            column
            for column in a.columns
            if column in b.columns
            and column not in WORKLOAD_METRICS
            and column not in METADATA_METRICS
            and column not in DATA_SKIP
            and pd.api.types.is_numeric_dtype(a[column])
        ]
        metrics = [*WORKLOAD_METRICS, *METADATA_METRICS, *others]
    rows = []
    by_phase_b = {str(row["phase"]): row for _, row in b.iterrows()}
    for _, row_a in a.iterrows():
        phase = str(row_a["phase"])
        row_b = by_phase_b.get(phase)
        if row_b is None:
            continue
        for metric in metrics:
            if metric in row_a and metric in row_b:
                value_a, value_b = _float(row_a[metric]), _float(row_b[metric])
                if not (math.isnan(value_a) and math.isnan(value_b)):  # e.g. bw of a metadata phase
                    rows.append((phase, metric, value_a, value_b))
    return rows


def _trace_rows(a: TraceStats | None, b: TraceStats | None) -> list[tuple[str, str, float, float]]:
    if a is None or b is None:
        return []
    rows: list[tuple[str, str, float, float]] = []
    if a.latency_by_op is not None and b.latency_by_op is not None:
        latency_b = b.latency_by_op.set_index("op")
        for _, row in a.latency_by_op.iterrows():
            op = str(row["op"])
            if op not in latency_b.index:
                continue
            for metric in LATENCY_METRICS:
                rows.append(
                    (f"engine {op}", metric, _float(row[metric]), _float(latency_b.at[op, metric]))
                )
    if a.io_depth is not None and b.io_depth is not None:
        rows.append(("engine submit", "mean io_depth (SQEs)", a.io_depth.mean, b.io_depth.mean))
        rows.append(
            ("engine submit", "io_depth 1 (%)", a.io_depth.depth1_pct, b.io_depth.depth1_pct)
        )
    rows.append(
        ("engine", "slow nodes (count)", float(len(a.slow_nodes)), float(len(b.slow_nodes)))
    )
    if a.rpc_retries is not None and b.rpc_retries is not None:
        rows.append(
            ("engine rpc", "retried (%)", a.rpc_retries.retried_pct, b.rpc_retries.retried_pct)
        )
    return rows


def _points(runs: Sequence[RunData], side: str) -> dict[str, RunData]:
    points: dict[str, RunData] = {}
    for run in runs:
        name = point_name(run)
        if name in points:
            raise MissingDataError(
                f"{side}: two runs of the point '{name}': {points[name].path} and {run.path}; "
                "give a directory that holds one sweep"
            )
        points[name] = run
    return points


def _with_point(names: Sequence[str], frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    tagged = [frame.assign(point=name) for name, frame in zip(names, frames, strict=True)]
    combined = pd.concat(tagged, ignore_index=True) if tagged else pd.DataFrame()
    return combined[["point", *[c for c in combined.columns if c != "point"]]]


def _rank_minimum(confidence: float) -> int:
    """The fewest repetitions per run (equal in both) at which the rank test can say 'changed'."""
    n = 2
    while not noise.rank_test_can_reach(n, n, 1 - confidence):
        n += 1
    return n


def higher_is_better(metric: str) -> bool:
    """Whether a larger value of ``metric`` is better (bandwidth, rates, scores)."""
    return metric.startswith(_HIGHER_IS_BETTER)


def _numbers(column: pd.Series) -> list[float]:
    return [value for value in (_float(v) for v in column) if not math.isnan(value)]


def _plain(value: Any) -> Any:
    """JSON-ready: NaN and None as None, numpy scalars as Python numbers."""
    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _change(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b) or a == 0:
        return math.nan
    return (b - a) / abs(a) * 100.0
