"""Reads against writes per node: how much slower one is per op, and where
the time goes.

Per daemon node and op, mean milliseconds per operation of:

- ``total``: what a client waited for one RPC to that node (``rpc_client``
  ``total_ns``, by the RPC's peer);
- ``queue``: the request waiting in the daemon before its storage work
  (``rpc_server`` ``queue_ns``);
- ``storage``: the daemon's storage operation (``storage_op`` ``latency_ns``);
- ``disk``: the device's own await from iostat on that node while those
  operations ran (``r_await``/``w_await``, weighted by requests per second).

When one op is more than ``GAP_FACTOR`` times slower than the other (on the
client's total, else on the daemon's storage op alone), the difference is
split into these parts, and the disk is said to explain it when its await
accounts for at least ``DISK_SHARE`` of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis.figures import figure
from analysis.stats._common import NS_PER_MS, group_positions, pair_positions, require_columns
from analysis.stats.latency import LATENCY

GAP_FACTOR = 2.0
DISK_SHARE = 0.5
OPS = ("read", "write")
PARTS = ("total", "queue", "storage", "disk")
AWAIT = {"read": ("r_await_ms", "r/s"), "write": ("w_await_ms", "w/s")}


@dataclass(frozen=True)
class Gap:
    """One node's slower op against its faster one, per op, in ms."""

    node: str
    slow: str
    fast: str
    basis: str  # "client total" or "storage op": what the ratio is of
    ratio: float
    slow_ms: dict[str, float]
    fast_ms: dict[str, float]

    def difference(self, part: str) -> float:
        return self.slow_ms[part] - self.fast_ms[part]

    @property
    def explanation(self) -> str:
        """Whether the disk or the software explains the gap, and which part."""
        key = "total" if self.basis == "client total" else "storage"
        gap = self.difference(key)
        disk = self.difference("disk")
        storage = _zero(self.difference("storage"))
        # The disk's await is part of the storage op: a storage difference too
        # small to explain the gap rules the disk out without iostat.
        if np.isnan(disk) and storage >= DISK_SHARE * gap:
            return "no iostat samples on the node: the disk cannot be told from the software"
        if not np.isnan(disk) and disk >= DISK_SHARE * gap:
            return (
                f"the disk explains it: its own await differs by {figure(disk, sign='+')} "
                f"of the {figure(gap, sign='+')} ms"
            )
        parts = {"storage path above the disk": storage - _zero(disk)}
        if key == "total":
            parts["server queue"] = self.difference("queue")
            parts["client and network (client wait minus the daemon's time)"] = (
                gap - _zero(self.difference("queue")) - storage
            )
        name, value = max(((k, _zero(v)) for k, v in parts.items()), key=lambda item: item[1])
        disk_text = "no iostat" if np.isnan(disk) else f"await {figure(disk, sign='+')}"
        return (
            f"the software explains it, not the disk ({disk_text}, "
            f"storage op {figure(storage, sign='+')} of {figure(gap, sign='+')} ms): "
            f"most is in the {name} ({figure(value, sign='+')} ms)"
        )

    def sentence(self) -> str:
        def figures(part: str, label: str) -> str:
            return f"{label} {figure(self.slow_ms[part])} vs {figure(self.fast_ms[part])}"

        shown = [("total", "client total"), ("queue", "server queue"),
                 ("storage", "storage op"), ("disk", "disk await")]  # fmt: skip
        where = ", ".join(figures(part, label) for part, label in shown
                          if not np.isnan(self.slow_ms[part]))  # fmt: skip
        return (
            f"{self.node}: {self.slow}s are {self.ratio:.1f}x slower than {self.fast}s per op "
            f"({self.basis}); ms per op, {self.slow} vs {self.fast}: {where}; "
            f"{self.explanation}"
        )


def _zero(value: float) -> float:
    return 0.0 if np.isnan(value) else value


def read_write_table(
    ops: pd.DataFrame,
    client: pd.DataFrame | None = None,
    server: pd.DataFrame | None = None,
    iostat: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per daemon node: ``<op>_<part>_ms`` for every op and part."""
    require_columns(ops, ["node", "op", "time_ns", LATENCY], "reads against writes")
    # Each frame is grouped by (node, op) once; a mask per node and op would read
    # every row of the frame again for each of them.
    chosen = _named_pairs(pair_positions(ops["node"], ops["op"]))
    totals = _pair_means(client, "peer", "total_ns")
    queues = _pair_means(server, "node", "queue_ns")
    latency, times = ops[LATENCY], ops["time_ns"]
    rows = []
    for node in group_positions(ops["node"]):
        row: dict[str, object] = {"node": str(node)}
        for op in OPS:
            positions = chosen.get((str(node), op), _NO_ROWS)
            row[f"{op}_ops"] = len(positions)
            row[f"{op}_total_ms"] = totals.get((str(node), op), np.nan)
            row[f"{op}_queue_ms"] = queues.get((str(node), op), np.nan)
            row[f"{op}_storage_ms"] = (
                _mean_of(latency, positions) / NS_PER_MS if len(positions) else np.nan
            )
            row[f"{op}_disk_ms"] = _await(iostat, str(node), op, times, positions)
        rows.append(row)
    return pd.DataFrame(rows)


_NO_ROWS = np.zeros(0, dtype=np.intp)


def read_write_gaps(table: pd.DataFrame) -> list[Gap]:
    """The nodes whose reads and writes differ by more than ``GAP_FACTOR`` per
    op: on what a client waited for, else on the daemon's storage op alone."""
    gaps = []
    for row in table.to_dict("records"):
        if not (row.get("read_ops") and row.get("write_ops")):
            continue
        times = {op: {part: float(row[f"{op}_{part}_ms"]) for part in PARTS} for op in OPS}
        for basis, key in (("client total", "total"), ("storage op", "storage")):
            if any(np.isnan(times[op][key]) for op in OPS):
                continue
            slow, fast = sorted(OPS, key=lambda op: times[op][key], reverse=True)
            if not times[fast][key] > 0:
                continue
            ratio = times[slow][key] / times[fast][key]
            if ratio > GAP_FACTOR:
                node = str(row["node"])
                gaps.append(Gap(node, slow, fast, basis, ratio, times[slow], times[fast]))
                break
    return gaps


def compared(table: pd.DataFrame) -> bool:
    """Whether some node did both reads and writes (so the check said something)."""
    return bool(not table.empty and ((table["read_ops"] > 0) & (table["write_ops"] > 0)).any())


def _named_pairs(
    pairs: dict[tuple[Any, Any], npt.NDArray[np.intp]],
) -> dict[tuple[str, str], npt.NDArray[np.intp]]:
    return {(str(node), str(op)): positions for (node, op), positions in pairs.items()}


def _pair_means(frame: pd.DataFrame | None, by: str, column: str) -> dict[tuple[str, str], float]:
    """Mean ``column`` in ms per (``by``, op) of ``frame``."""
    if frame is None or frame.empty or by not in frame.columns:
        return {}
    pairs = _named_pairs(pair_positions(frame[by], frame["op"]))
    values = frame[column]
    return {key: _mean_of(values, positions) / NS_PER_MS for key, positions in pairs.items()}


def _mean_of(values: pd.Series, positions: npt.NDArray[np.intp]) -> float:
    """The mean of the rows at ``positions``, as pandas takes it of the selected rows
    (missing values skipped, integers summed as floats)."""
    return float(pd.Series(values.to_numpy()[positions]).mean())


def _await(
    iostat: pd.DataFrame | None,
    node: str,
    op: str,
    times: pd.Series,
    positions: npt.NDArray[np.intp],
) -> float:
    """The device's await for ``op`` on ``node`` while those operations (the rows
    of ``times`` at ``positions``) ran."""
    if iostat is None or iostat.empty or len(positions) == 0:
        return np.nan
    await_column, rate_column = AWAIT[op]
    samples = iostat[iostat["node"].astype(str) == node]
    if "time_ns" in samples.columns and not samples["time_ns"].isna().all():
        during = times.to_numpy()[positions]
        first, last = int(during.min()), int(during.max())
        samples = samples[(samples["time_ns"] >= first) & (samples["time_ns"] <= last)]
    samples = samples[samples[rate_column] > 0]
    if samples.empty:
        return np.nan
    weights = samples[rate_column].to_numpy(dtype=np.float64)
    values = samples[await_column].to_numpy(dtype=np.float64)
    return float((values * weights).sum() / weights.sum())
