"""Cross-check the engine's slow nodes against iostat on the same node and time.

The engine's figures say *that* a node was slow; iostat's r_await/w_await on
that node during the same window says whether its disk was slow too (then
the hardware or a neighbour is to blame, not the software).

``iostat`` frames have one row per node, device and sample: ``node``,
``time_ns`` (may be missing: then every sample of the node counts), ``r/s``,
``w/s``, ``r_await_ms``, ``w_await_ms``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from analysis.stats._common import NS_PER_MS, group_positions, require_columns
from analysis.stats.latency import LATENCY

# A disk await counts as slow from this value on...
SLOW_AWAIT_MS = 20.0
# ...or at this many times the median of the other nodes' awaits.
SLOW_AWAIT_FACTOR = 5.0


def crosscheck_iostat(
    ops: pd.DataFrame, iostat: pd.DataFrame, *, slow_nodes: Iterable[str]
) -> pd.DataFrame:
    """Per node: the engine's read/write means beside iostat's awaits, and a verdict."""
    require_columns(ops, ["node", "op", "time_ns", LATENCY], "iostat cross-check")
    require_columns(
        iostat, ["node", "r/s", "w/s", "r_await_ms", "w_await_ms"], "iostat cross-check"
    )
    flagged = set(slow_nodes)
    rows = []
    for node, positions in group_positions(ops["node"]).items():
        node_ops = ops.iloc[positions]
        window = (int(node_ops["time_ns"].min()), int(node_ops["time_ns"].max()))
        samples = _samples_in_window(iostat[iostat["node"] == node], window)
        rows.append(
            {
                "node": str(node),
                "engine_slow": str(node) in flagged,
                "engine_read_mean_ms": _mean_ms(node_ops, "read"),
                "engine_write_mean_ms": _mean_ms(node_ops, "write"),
                "iostat_samples": len(samples),
                "r_await_ms": _weighted(samples["r_await_ms"], samples["r/s"]),
                "w_await_ms": _weighted(samples["w_await_ms"], samples["w/s"]),
                "r_await_max_ms": float(samples["r_await_ms"].max()) if len(samples) else np.nan,
            }
        )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["disk_slow"] = _disk_slow(table)
    table["verdict"] = [_verdict(row) for row in table.itertuples(index=False)]
    return table


def _samples_in_window(samples: pd.DataFrame, window: tuple[int, int]) -> pd.DataFrame:
    if "time_ns" not in samples.columns or samples["time_ns"].isna().all():
        return samples
    times = samples["time_ns"]
    return samples[(times >= window[0]) & (times <= window[1])]


def _mean_ms(ops: pd.DataFrame, op: str) -> float:
    chosen = ops.loc[ops["op"] == op, LATENCY]
    return float(chosen.mean() / NS_PER_MS) if len(chosen) else np.nan


def _weighted(values: pd.Series, weights: pd.Series) -> float:
    total = float(weights.sum())
    if len(values) == 0:
        return np.nan
    if total <= 0:
        return float(values.mean())
    return float((values * weights).sum() / total)


def _disk_slow(table: pd.DataFrame) -> list[bool]:
    result = []
    for index, row in table.iterrows():
        others = table.drop(index=index)
        slow = False
        for column in ("r_await_ms", "w_await_ms"):
            value = row[column]
            if pd.isna(value):
                continue
            typical = others[column].median() if len(others) else np.nan
            if value >= SLOW_AWAIT_MS or (
                not pd.isna(typical) and typical > 0 and value >= SLOW_AWAIT_FACTOR * typical
            ):
                slow = True
        result.append(slow)
    return result


def _verdict(row: object) -> str:
    samples = getattr(row, "iostat_samples")  # noqa: B009 - itertuples field
    engine_slow, disk_slow = getattr(row, "engine_slow"), getattr(row, "disk_slow")  # noqa: B009
    if samples == 0:
        return "no iostat samples in the window"
    if engine_slow and disk_slow:
        return "disk slow too: the node's device (or a neighbour on it)"
    if engine_slow:
        return "disk normal: look above the device (engine, network, CPU)"
    if disk_slow:
        return "disk slow, the engine not visibly affected"
    return "ok"
