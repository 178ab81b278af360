"""io_depth: how many SQEs each io_uring submit carried (``submit`` events).

A mean near 1 while many operations are in flight means the ring submits one
operation at a time although work is waiting: batching is absent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.stats._common import (
    NodeTimeGroups,
    bucket_shares,
    group_positions,
    percentiles,
    require_columns,
)

DEPTH = "sqes"
IN_FLIGHT = "in_flight"
BUCKET_EDGES = (0, 1, 4, 8, 16, 32, 64, 128, 512, float("inf"))
BUCKET_LABELS = ("1", "2-4", "5-8", "9-16", "17-32", "33-64", "65-128", "129-512", ">512")
# Batching is expected when this many operations are in flight on average...
BUSY_IN_FLIGHT = 4.0
# ...and considered absent when the mean submit carries fewer SQEs than this.
NO_BATCHING_DEPTH = 1.2


@dataclass(frozen=True)
class IoDepthSummary:
    submits: int
    mean: float
    median: float
    std: float
    p90: float
    p99: float
    max: int
    depth1_pct: float
    mean_in_flight: float
    max_in_flight: int

    def rows(self) -> list[tuple[str, str]]:
        """(metric, value) pairs as a report shows them."""
        return [
            ("submits (count)", f"{self.submits:,}"),
            ("mean io_depth (SQEs)", f"{self.mean:.2f}"),
            ("median io_depth (SQEs)", f"{self.median:g}"),
            ("std io_depth (SQEs)", f"{self.std:.2f}"),
            ("p90 io_depth (SQEs)", f"{self.p90:g}"),
            ("p99 io_depth (SQEs)", f"{self.p99:g}"),
            ("max io_depth (SQEs)", f"{self.max:,}"),
            ("submits with io_depth 1 (%)", f"{self.depth1_pct:.1f}"),
            ("mean ops in flight (count)", f"{self.mean_in_flight:.2f}"),
            ("max ops in flight (count)", f"{self.max_in_flight:,}"),
        ]


def io_depth_summary(submits: pd.DataFrame) -> IoDepthSummary:
    """Totals and distribution of io_depth over all submits."""
    require_columns(submits, [DEPTH, IN_FLIGHT], "io_depth")
    depth = submits[DEPTH].to_numpy(dtype=np.float64)
    in_flight = submits[IN_FLIGHT].to_numpy(dtype=np.float64)
    if depth.size == 0:
        nan = float("nan")
        return IoDepthSummary(0, nan, nan, nan, nan, nan, 0, nan, nan, 0)
    points = percentiles(depth, ["p50", "p90", "p99"])
    return IoDepthSummary(
        submits=int(depth.size),
        mean=float(depth.mean()),
        median=points["p50"],
        std=float(depth.std()),
        p90=points["p90"],
        p99=points["p99"],
        max=int(depth.max()),
        depth1_pct=float((depth == 1).mean() * 100.0),
        mean_in_flight=float(in_flight.mean()),
        max_in_flight=int(in_flight.max()),
    )


def io_depth_histogram(submits: pd.DataFrame) -> pd.DataFrame:
    """Submits per io_depth bucket (1, 2-4, ..., >512): ``bucket``, ``count``, ``share_pct``."""
    require_columns(submits, [DEPTH], "io_depth")
    table = bucket_shares(submits[DEPTH].to_numpy(), BUCKET_EDGES, BUCKET_LABELS)
    return table.rename(columns={"bucket": "io_depth", "count": "submits"})


def io_depth_by_node(submits: pd.DataFrame) -> pd.DataFrame:
    """Per node: submits, mean/median/p99/max io_depth, share with depth 1, mean in flight."""
    require_columns(submits, ["node", DEPTH, IN_FLIGHT], "io_depth by node")
    depth = submits[DEPTH].to_numpy(dtype=np.float64)
    in_flight = submits[IN_FLIGHT].to_numpy(dtype=np.float64)
    rows = []
    for node, positions in group_positions(submits["node"]).items():
        chosen = depth[positions]
        p50, p99 = np.percentile(chosen, [50.0, 99.0])
        rows.append(
            {
                "node": node,
                "submits": int(chosen.size),
                "mean_sqes": float(chosen.mean()),
                "p50_sqes": float(p50),
                "p99_sqes": float(p99),
                "max_sqes": int(chosen.max()),
                "depth1_pct": float((chosen == 1).mean() * 100.0),
                "mean_in_flight": float(in_flight[positions].mean()),
            }
        )
    return pd.DataFrame(rows)


def io_depth_over_time(
    submits: pd.DataFrame, *, start_ns: int | None = None, bucket_s: float = 10.0
) -> pd.DataFrame:
    """Per node and time bucket: submits, mean io_depth and mean ops in flight."""
    require_columns(submits, ["time_ns", "node", DEPTH, IN_FLIGHT], "io_depth over time")
    if start_ns is None:
        start_ns = int(submits["time_ns"].min()) if len(submits) else 0
    groups = NodeTimeGroups(submits["node"], submits["time_ns"], start_ns, bucket_s)
    table = groups.frame()
    table["submits"] = groups.count()
    table["mean_sqes"] = groups.mean(submits[DEPTH].to_numpy(dtype=np.float64))
    table["mean_in_flight"] = groups.mean(submits[IN_FLIGHT].to_numpy(dtype=np.float64))
    return table


def batching_warning(summary: IoDepthSummary) -> str | None:
    """A sentence when many ops are in flight but submits carry ~1 SQE each."""
    if summary.submits == 0:
        return None
    if summary.mean_in_flight >= BUSY_IN_FLIGHT and summary.mean < NO_BATCHING_DEPTH:
        return (
            f"batching is absent under load: {summary.mean_in_flight:.1f} ops in flight on "
            f"average, yet the mean submit carries {summary.mean:.2f} SQEs "
            f"({summary.depth1_pct:.1f}% of submits have io_depth 1)"
        )
    return None


def batching_verdict(summary: IoDepthSummary) -> str:
    """What the submits allow saying about batching, and only that.

    With fewer than ``BUSY_IN_FLIGHT`` ops in flight on average a ring has
    little to batch, so one SQE per submit proves nothing either way.
    """
    if summary.submits == 0:
        return "no io_uring submits: batching not judged"
    if summary.mean_in_flight < BUSY_IN_FLIGHT:
        return (
            f"not enough load to judge batching: {summary.mean_in_flight:.1f} ops in flight "
            f"on average (judged from {BUSY_IN_FLIGHT:g})"
        )
    if summary.mean < NO_BATCHING_DEPTH:
        return "batching absent under load"
    return (
        f"batching present: {summary.mean:.2f} SQEs per submit with "
        f"{summary.mean_in_flight:.1f} ops in flight on average"
    )
