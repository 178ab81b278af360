"""Storage latency per node, and per node over time.

The per-node table is the one people build by hand to find a sick node:
ops, slow ops over a threshold, slow-op rate, mean, p99, and the ratio of
mean read to mean write time (a node whose reads alone are slow has a high
ratio). Over time it tells its time pattern (whole, onset, intermittent, recovered).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.stats._common import NS_PER_MS, NodeTimeGroups, Pairs, require_columns
from analysis.stats.grouped import grouped_distribution
from analysis.stats.latency import LATENCY
from analysis.stats.patterns import bucket_pattern

SLOW_MS = 100.0
# A node is flagged when at least this share of its ops is slow...
SLOW_NODE_PCT = 5.0
# ...or when a smaller share (still at least this) comes with a mean this many
# times the typical node's: a loaded machine gives a healthy node a percent or
# two of slow ops with a mean near the others', which is noise, not a sick node...
SOME_SLOW_PCT = 1.0
SOME_SLOW_MEAN_FACTOR = 3.0
# ...or when its mean alone is this many times the median of all nodes' means.
SLOW_NODE_MEAN_FACTOR = 10.0
# A time bucket counts as slow for a node when this share of its ops is slow.
SLOW_BUCKET_PCT = 10.0


def node_latency_table(ops: pd.DataFrame, *, slow_ms: float = SLOW_MS) -> pd.DataFrame:
    """One row per node, sorted worst first (slow-op rate, then mean)."""
    require_columns(ops, ["node", "op", LATENCY], "per-node latency")
    table = grouped_distribution(
        ops, "node", LATENCY, scale=NS_PER_MS, suffix="_ms", names=("p50", "p99")
    ).rename(columns={"count": "ops"})
    latency_ms = ops[LATENCY].to_numpy(dtype=np.float64) / NS_PER_MS
    pairs = Pairs(ops["node"], ops["op"])
    slow = pairs.sums(latency_ms > slow_ms).sum(axis=1)
    table.insert(2, "slow_ops", table["node"].map(slow).astype(np.int64))
    table.insert(3, "slow_pct", table["slow_ops"] / table["ops"] * 100.0)
    counts = pairs.sums()
    totals = pairs.sums(latency_ms)
    for op in ("read", "write"):
        if op in counts.columns:
            table[f"{op}_ops"] = table["node"].map(counts[op]).fillna(0).astype(np.int64)
            table[f"{op}_mean_ms"] = table["node"].map(totals[op] / counts[op].replace(0, np.nan))
        else:
            table[f"{op}_ops"] = 0
            table[f"{op}_mean_ms"] = np.nan
    table["read_write_ratio"] = table["read_mean_ms"] / table["write_mean_ms"]
    return table.sort_values(["slow_pct", "mean_ms"], ascending=False, ignore_index=True)


def node_latency_over_time(
    ops: pd.DataFrame,
    *,
    start_ns: int | None = None,
    bucket_s: float = 10.0,
    slow_ms: float = SLOW_MS,
    op: str | None = None,
) -> pd.DataFrame:
    """Per node and time bucket: ops, slow ops, slow rate, mean and max in ms."""
    require_columns(ops, ["time_ns", "node", "op", LATENCY], "per-node latency over time")
    if op is not None:
        ops = ops[ops["op"] == op]
    if start_ns is None:
        start_ns = int(ops["time_ns"].min()) if len(ops) else 0
    latency_ms = ops[LATENCY].to_numpy(dtype=np.float64) / NS_PER_MS
    groups = NodeTimeGroups(ops["node"], ops["time_ns"], start_ns, bucket_s)
    table = groups.frame()
    table["ops"] = groups.count()
    table["slow_ops"] = groups.sum(latency_ms > slow_ms).astype(np.int64)
    table["slow_pct"] = table["slow_ops"] / table["ops"] * 100.0
    table["mean_ms"] = groups.mean(latency_ms)
    table["max_ms"] = groups.max(latency_ms)
    return table


def slow_node_persistence(
    over_time: pd.DataFrame, *, slow_bucket_pct: float = SLOW_BUCKET_PCT
) -> pd.DataFrame:
    """Per node: active and slow buckets, first/last slow bucket, and its time
    pattern (``analysis.stats.patterns``): ``whole``, ``onset`` (to the end),
    ``intermittent``, ``recovered`` or ``none``; ``when`` says it in words
    (``slow from t+10 s to the end``)."""
    require_columns(over_time, ["node", "t_start_s", "slow_pct"], "slow-node persistence")
    starts = np.sort(over_time["t_start_s"].unique()) if not over_time.empty else np.array([])
    bucket_s = float(np.min(np.diff(starts))) if len(starts) > 1 else 1.0
    rows = []
    for node, group in over_time.groupby("node", observed=True, sort=True):
        flags = (group["slow_pct"] >= slow_bucket_pct).to_list()
        slow = group[group["slow_pct"] >= slow_bucket_pct]
        slow_count = len(slow)
        said = bucket_pattern(group["t_start_s"].to_list(), flags, bucket_s)
        rows.append(
            {
                "node": node,
                "buckets": len(group),
                "slow_buckets": slow_count,
                "first_slow_s": float(slow["t_start_s"].min()) if slow_count else np.nan,
                "last_slow_s": float(slow["t_start_s"].max()) if slow_count else np.nan,
                "pattern": said.pattern,
                "when": said.words() if slow_count else "",
            }
        )
    columns = ["node", "buckets", "slow_buckets", "first_slow_s", "last_slow_s", "pattern", "when"]
    return pd.DataFrame(rows, columns=columns)


def flag_slow_nodes(
    node_table: pd.DataFrame,
    *,
    min_slow_pct: float = SLOW_NODE_PCT,
    mean_factor: float = SLOW_NODE_MEAN_FACTOR,
) -> list[str]:
    """Nodes with many slow ops, some slow ops and a mean well above the
    typical node's, or a mean far above it."""
    require_columns(node_table, ["node", "slow_pct", "mean_ms"], "slow-node flags")
    if node_table.empty:
        return []
    typical = float(node_table["mean_ms"].median())
    share, mean = node_table["slow_pct"], node_table["mean_ms"]
    flagged = (
        (share >= min_slow_pct)
        | ((share >= SOME_SLOW_PCT) & (mean >= SOME_SLOW_MEAN_FACTOR * typical))
        | (mean >= mean_factor * typical)
    )
    return [str(node) for node in node_table.loc[flagged, "node"]]
