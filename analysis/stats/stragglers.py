"""Stragglers: nodes whose disk turned slow while the workload ran.

iostat keeps running on every node during a run. A node is a straggler in
a time bucket when its request-weighted r_await or w_await is both beyond
an absolute limit and far above the median of the other nodes in the same
bucket (the same two-sided evidence the preflight policy asks for). Over
the buckets this tells a node that was slow all along from one that turned
slow mid-run, and says from when.

Input: the iostat frame of a results directory (one row per node, device
and sample): ``node``, ``time_ns``, ``r/s``, ``w/s``, ``r_await_ms``,
``w_await_ms`` and, when present, ``util``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from analysis.stats._common import require_columns
from analysis.stats.crosscheck import SLOW_AWAIT_FACTOR, SLOW_AWAIT_MS
from analysis.stats.patterns import bucket_pattern

BUCKET_S = 10.0
COLUMNS = [
    "node",
    "buckets",
    "slow_buckets",
    "first_slow_s",
    "worst_metric",
    "worst_ms",
    "others_ms",
    "pattern",
    "verdict",
]


def iostat_over_time(iostat: pd.DataFrame, *, bucket_s: float = BUCKET_S) -> pd.DataFrame:
    """Per node and time bucket: request-weighted r_await/w_await, mean util."""
    require_columns(
        iostat, ["node", "time_ns", "r/s", "w/s", "r_await_ms", "w_await_ms"], "iostat over time"
    )
    samples = iostat.dropna(subset=["time_ns"])
    if samples.empty:
        return pd.DataFrame(columns=["node", "t_start_s", "r_await_ms", "w_await_ms", "util"])
    start = float(samples["time_ns"].min())
    frame = pd.DataFrame(
        {
            "node": samples["node"].astype(str).to_numpy(),
            "bucket": ((samples["time_ns"].to_numpy(np.float64) - start) / 1e9 // bucket_s),
            "r_w": samples["r/s"].to_numpy(np.float64),
            "w_w": samples["w/s"].to_numpy(np.float64),
            "r_x": (samples["r_await_ms"] * samples["r/s"]).to_numpy(np.float64),
            "w_x": (samples["w_await_ms"] * samples["w/s"]).to_numpy(np.float64),
            "util": samples["util"].to_numpy(np.float64) if "util" in samples.columns else np.nan,
        }
    )
    grouped = frame.groupby(["node", "bucket"], sort=True)
    sums = grouped[["r_w", "w_w", "r_x", "w_x"]].sum()
    table = pd.DataFrame(
        {
            "r_await_ms": (sums["r_x"] / sums["r_w"]).where(sums["r_w"] > 0),
            "w_await_ms": (sums["w_x"] / sums["w_w"]).where(sums["w_w"] > 0),
            "util": grouped["util"].mean(),
        }
    ).reset_index()
    table.insert(1, "t_start_s", table.pop("bucket") * bucket_s)
    return table


def find_stragglers(
    over_time: pd.DataFrame,
    *,
    limit_ms: float = SLOW_AWAIT_MS,
    factor: float = SLOW_AWAIT_FACTOR,
) -> pd.DataFrame:
    """One row per node: slow buckets, since when, how slow against the others."""
    require_columns(
        over_time, ["node", "t_start_s", "r_await_ms", "w_await_ms"], "straggler detection"
    )
    slow_rows = []
    for _, bucket in over_time.groupby("t_start_s", sort=True):
        for metric in ("r_await_ms", "w_await_ms"):
            values = bucket.set_index("node")[metric]
            for node, value in values.items():
                others = values.drop(index=node).dropna()
                if pd.isna(value) or others.empty:
                    continue
                typical = float(others.median())
                if value >= limit_ms and value >= factor * max(typical, 1e-9):
                    slow_rows.append(
                        (node, float(bucket["t_start_s"].iloc[0]), metric, value, typical)
                    )
    slow = pd.DataFrame(slow_rows, columns=["node", "t_start_s", "metric", "ms", "others_ms"])
    rows = []
    for node, group in over_time.groupby("node", sort=True):
        mine = slow[slow["node"] == node]
        buckets = int(group["t_start_s"].nunique())
        slow_buckets = int(mine["t_start_s"].nunique())
        if slow_buckets == 0:
            rows.append([node, buckets, 0, np.nan, "", np.nan, np.nan, "none", "ok"])
            continue
        worst = mine.iloc[int(np.argmax(mine["ms"].to_numpy()))]
        first = float(mine["t_start_s"].min())
        times = sorted(group["t_start_s"].unique())
        slow_times = set(mine["t_start_s"])
        said = bucket_pattern(times, [t in slow_times for t in times], _bucket_s(times))
        pattern = said.pattern
        name = str(worst["metric"]).removesuffix("_ms")
        when = said.words()
        verdict = (
            f"{name} {worst['ms']:.1f} ms vs {worst['others_ms']:.1f} ms on the other nodes, "
            f"{when} ({slow_buckets} of {buckets} buckets)"
        )
        rows.append(
            [
                node,
                buckets,
                slow_buckets,
                first,
                name,
                float(worst["ms"]),
                float(worst["others_ms"]),
                pattern,
                verdict,
            ]
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def _bucket_s(times: list[float]) -> float:
    return float(min(b - a for a, b in itertools.pairwise(times))) if len(times) > 1 else 1.0
