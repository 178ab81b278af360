"""RPC statistics from ``rpc_client`` and ``rpc_server`` events.

Phases: the client's send, wait and total; the server's queue wait, storage
time and reply. Load per target node shows imbalance (all requests going to
half of the servers, or placement hot spots); in-flight concurrency shows
whether the client's fan-out is bounded.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

from analysis.stats._common import NS_PER_MS, group_positions, require_columns
from analysis.stats.grouped import distribution

CLIENT_PHASES = {"send_ns": "client send", "wait_ns": "client wait", "total_ns": "client total"}
SERVER_PHASES = {"queue_ns": "server queue", "storage_ns": "server storage", "reply_ns": "reply"}
MIB = 1024 * 1024
PHASE_NAMES = ("p50", "p90", "p99", "p99.9")


def rpc_phases(client: pd.DataFrame | None, server: pd.DataFrame | None) -> pd.DataFrame:
    """One row per phase: count, mean, p50/p90/p99/p99.9, max in ms."""
    parts: list[dict[str, object]] = []
    for frame, phases, what in (
        (client, CLIENT_PHASES, "rpc_client"),
        (server, SERVER_PHASES, "rpc_server"),
    ):
        if frame is None or frame.empty:
            continue
        require_columns(frame, phases, f"RPC phases ({what})")
        for column, phase in phases.items():
            values = frame[column].to_numpy(dtype=np.float64) / NS_PER_MS
            parts.append({"phase": phase, **distribution(values, suffix="_ms", names=PHASE_NAMES)})
    if not parts:
        return pd.DataFrame(columns=["phase", "count", "mean_ms"])
    return pd.DataFrame(parts)


@dataclass(frozen=True)
class RetrySummary:
    rpcs: int
    retried_rpcs: int
    retried_pct: float
    total_retries: int
    failed_rpcs: int
    failed_pct: float
    # "unlink ENOENT x12", most frequent first: a broadcast unlink or stat
    # gets ENOENT from every daemon that holds nothing of the file.
    failures: tuple[str, ...] = ()


def rpc_retries(client: pd.DataFrame) -> RetrySummary:
    """How many RPCs needed retries, how many retries in all, how many failed."""
    require_columns(client, ["retries", "status"], "RPC retries")
    retries = client["retries"].to_numpy(dtype=np.int64)
    failed = int((client["status"].to_numpy() != 0).sum())
    count = int(retries.size)
    retried = int((retries > 0).sum())
    return RetrySummary(
        failures=_failures(client),
        rpcs=count,
        retried_rpcs=retried,
        retried_pct=retried / count * 100.0 if count else float("nan"),
        total_retries=int(retries.sum()),
        failed_rpcs=failed,
        failed_pct=failed / count * 100.0 if count else float("nan"),
    )


def _failures(client: pd.DataFrame) -> tuple[str, ...]:
    if "op" not in client.columns:
        return ()
    bad = client[client["status"] != 0]
    if bad.empty:
        return ()
    keys = pd.DataFrame({"op": bad["op"].astype(str), "errno": bad["status"].abs().astype(int)})
    counts = keys.value_counts()
    return tuple(
        f"{op} {errno.errorcode.get(int(code), str(code))} x{n}"
        for (op, code), n in zip(counts.index.to_list(), counts.to_list(), strict=True)
    )


@dataclass(frozen=True)
class InFlight:
    mean: float
    max: int


def rpc_in_flight(client: pd.DataFrame) -> pd.DataFrame:
    """Concurrent RPCs per client process: time-weighted mean and max.

    Each RPC is in flight from ``time_ns - total_ns`` to ``time_ns``.
    """
    require_columns(client, ["node", "pid", "time_ns", "total_ns"], "RPC in-flight")
    rows = []
    groups = client.groupby(["node", "pid"], observed=True).indices
    for key, positions in groups.items():
        node, pid = cast(tuple[str, int], key)
        end = client["time_ns"].to_numpy(dtype=np.int64)[positions]
        start = end - client["total_ns"].to_numpy(dtype=np.int64)[positions]
        level = concurrency(start, end)
        rows.append({"node": node, "pid": pid, "rpcs": len(positions),
                     "mean_in_flight": level.mean, "max_in_flight": level.max})  # fmt: skip
    return pd.DataFrame(rows, columns=["node", "pid", "rpcs", "mean_in_flight", "max_in_flight"])


def concurrency(start: np.ndarray, end: np.ndarray) -> InFlight:
    """Time-weighted mean and max number of overlapping [start, end) intervals."""
    if start.size == 0:
        return InFlight(0.0, 0)
    times = np.concatenate([start, end])
    steps = np.concatenate([np.ones(start.size, np.int64), -np.ones(end.size, np.int64)])
    # At equal times ends come first, so back-to-back intervals do not overlap.
    order = np.lexsort((steps, times))
    times, level = times[order], np.cumsum(steps[order])
    span = times[-1] - times[0]
    durations = np.diff(times)
    mean = float((level[:-1] * durations).sum() / span) if span > 0 else float(level.max())
    return InFlight(mean, int(level.max()))


def rpc_load_by_target(client: pd.DataFrame, *, all_nodes: Iterable[str] = ()) -> pd.DataFrame:
    """Requests and bytes per target node; nodes in ``all_nodes`` that got none appear as 0."""
    require_columns(client, ["peer", "bytes"], "RPC load by target")
    positions = group_positions(client["peer"])
    sent = client["bytes"].to_numpy(dtype=np.int64)
    table = pd.DataFrame(
        {
            "target": [str(target) for target in positions],
            "requests": [len(rows) for rows in positions.values()],
            "bytes": [int(sent[rows].sum()) for rows in positions.values()],
        }
    )
    missing = sorted(set(all_nodes) - set(table["target"]))
    if missing:
        zeros = pd.DataFrame({"target": missing, "requests": 0, "bytes": 0})
        table = pd.concat([table, zeros], ignore_index=True)
    table["MiB"] = table["bytes"] / MIB
    total = table["requests"].sum()
    table["requests_pct"] = table["requests"] / total * 100.0 if total else 0.0
    return table.sort_values("target", ignore_index=True)


@dataclass(frozen=True)
class Imbalance:
    """max/mean and coefficient of variation (std/mean) of a per-node quantity."""

    max_over_mean: float
    cv: float
    idle_targets: int


def imbalance(values: pd.Series) -> Imbalance:
    array = values.to_numpy(dtype=np.float64)
    mean = array.mean() if array.size else 0.0
    if mean == 0:
        return Imbalance(float("nan"), float("nan"), int((array == 0).sum()))
    return Imbalance(float(array.max() / mean), float(array.std() / mean), int((array == 0).sum()))
