"""Compare two runs: the change per phase and metric, and what was configured differently."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis.loaders.run import RunData
from analysis.reports.build import WORKLOAD_SKIP, flatten
from analysis.stats.overview import TraceStats, trace_stats

WORKLOAD_METRICS = ("bwMaxMIB", "bwMinMIB", "bwMeanMIB", "OPsMean", "MeanTime")
# The figures of a metadata phase (analysis.phases.MetadataPhase), first in its rows.
METADATA_METRICS = ("rate_max_ops_s", "rate_min_ops_s", "rate_mean_ops_s", "time_mean_s")
LATENCY_METRICS = ("mean_ms", "p50_ms", "p99_ms", "p99.9_ms", "max_ms")
# Keys that differ between any two runs and say nothing about the setup.
_VOLATILE_KEYS = ("start", "end", "time", "pid", "timestamp")


@dataclass(frozen=True)
class Comparison:
    metrics: pd.DataFrame  # phase, metric, A, B, change_pct
    config_diff: pd.DataFrame  # key, A, B


def compare_runs(
    a: RunData,
    b: RunData,
    *,
    stats_a: TraceStats | None = None,
    stats_b: TraceStats | None = None,
) -> Comparison:
    """Metrics of B against A (change in percent of A) and the differing config keys."""
    if stats_a is None and a.traces is not None:
        stats_a = trace_stats(a.traces)
    if stats_b is None and b.traces is not None:
        stats_b = trace_stats(b.traces)
    rows = _workload_rows(a.workload, b.workload) + _trace_rows(stats_a, stats_b)
    metrics = pd.DataFrame(rows, columns=["phase", "metric", "A", "B"])
    metrics["change_pct"] = [_change(x, y) for x, y in zip(metrics["A"], metrics["B"], strict=True)]
    return Comparison(metrics=metrics, config_diff=config_diff(a.config, b.config))


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


def _workload_rows(a: pd.DataFrame, b: pd.DataFrame) -> list[tuple[str, str, float, float]]:
    """IOR's main figures first, then every other numeric column both runs have."""
    others = [
        column
        for column in a.columns
        if column in b.columns
        and column not in WORKLOAD_METRICS
        and column not in METADATA_METRICS
        and column not in WORKLOAD_SKIP
        and pd.api.types.is_numeric_dtype(a[column])
    ]
    rows = []
    by_phase_b = {str(row["phase"]): row for _, row in b.iterrows()}
    for _, row_a in a.iterrows():
        phase = str(row_a["phase"])
        row_b = by_phase_b.get(phase)
        if row_b is None:
            continue
        for metric in [*WORKLOAD_METRICS, *METADATA_METRICS, *others]:
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


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _change(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b) or a == 0:
        return math.nan
    return (b - a) / abs(a) * 100.0
