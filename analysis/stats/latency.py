"""I/O latency of completed storage operations (``storage_op`` events)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.figures import figure
from analysis.stats._common import (
    NS_PER_MS,
    bucket_index,
    group_positions,
    index_shares,
    require_columns,
)
from analysis.stats.grouped import grouped_distribution

LATENCY = "latency_ns"
BUCKET_EDGES_NS = (
    0, 100e3, 500e3, 1e6, 5e6, 10e6, 50e6, 100e6, float("inf"),
)  # fmt: skip
BUCKET_LABELS = (
    "0-100 us", "100-500 us", "0.5-1 ms", "1-5 ms", "5-10 ms", "10-50 ms", "50-100 ms", ">100 ms",
)  # fmt: skip
# A mean this many times the median says a slow tail or a second mode dominates.
BIMODAL_RATIO = 3.0


def latency_by_op(ops: pd.DataFrame) -> pd.DataFrame:
    """Per operation kind: count, mean, p50/p90/p95/p99/p99.9 and max in ms, errors."""
    require_columns(ops, ["op", "status", LATENCY], "latency")
    table = grouped_distribution(ops, "op", LATENCY, scale=NS_PER_MS, suffix="_ms")
    errors = (ops["status"] != 0).groupby(ops["op"], observed=True).sum()
    table["errors"] = table["op"].map(errors).fillna(0).astype(np.int64)
    return table


def latency_buckets(ops: pd.DataFrame) -> pd.DataFrame:
    """Share of operations per latency bucket, one column per op plus ``all``."""
    require_columns(ops, ["op", LATENCY], "latency buckets")
    index = bucket_index(ops[LATENCY].to_numpy(dtype=np.float64), BUCKET_EDGES_NS)
    every = index_shares(index, BUCKET_LABELS)
    table = every[["bucket"]].copy()
    for op, positions in group_positions(ops["op"]).items():
        table[f"{op}_pct"] = index_shares(index[positions], BUCKET_LABELS)["share_pct"].to_numpy()
    table["all_pct"] = every["share_pct"]
    return table


def bimodal_hints(by_op: pd.DataFrame) -> list[str]:
    """Sentences for op kinds whose mean is far above the median."""
    hints = []
    for row in by_op.itertuples(index=False):
        mean, median = float(row.mean_ms), float(row.p50_ms)  # type: ignore[arg-type]
        if median > 0 and mean >= BIMODAL_RATIO * median:
            hints.append(
                f"{row.op}: mean {figure(mean)} ms is {mean / median:.0f}x the median "
                f"{figure(median)} ms; a slow tail or a second mode (often a few slow nodes) "
                "dominates the mean; see the per-node table"
            )
    return hints
