"""A node's figures over one sampling interval, from two cumulative readings.

A daemon's reading is its stats reply (docs/RPC.md, "Stats JSON"): its
``timing`` counters summed per op since it started, so the difference of two
replies is the interval's time per request in each layer the daemon sees
(queue, storage op, the whole request) and its histograms' difference the
interval's p99. A posix: target has no daemons: there a node's reading is
its ranks' progress records (bytes and ops done), and its time per op is
what its ranks waited, ``ranks x queue depth x interval / ops``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchfs.health.kernel_evidence import kernel_interval

# The sampler's own requests, never the workload's: left out of every figure.
OWN_OPS = frozenset({"stats", "ping"})
MIB = 1 << 20


@dataclass(frozen=True)
class NodeFigures:
    """One node over one interval; times in ms per op, None where not measured."""

    node: str
    host: str | None
    seconds: float
    # The workload's requests answered (daemon) or ops done (ranks) in the interval.
    ops: int
    # Requests holding a slot or waiting for one at the interval's end (daemons only).
    in_flight: int = 0
    server_ms: float | None = None
    queue_ms: float | None = None
    storage_op_ms: float | None = None
    server_p99_ms: float | None = None
    storage_p99_ms: float | None = None
    # The ranks' wait per op (posix: targets, from their progress records).
    client_ms: float | None = None
    # The sampler's pings of the daemon over the interval: the mean round trip of an
    # empty one, and of one carrying 64 KiB to it.
    rtt_ms: float | None = None
    bulk_rtt_ms: float | None = None
    mib_s: float = 0.0
    # iostat of the node's data device over the interval (everything it moved, MB/s).
    await_ms: float | None = None
    util_pct: float | None = None
    device_mb_s: float | None = None
    # The daemon's "kernel" object over the interval (``kernel_interval`` of two replies).
    kernel: Mapping[str, Any] = field(default_factory=dict)

    @property
    def stalled(self) -> bool:
        """Requests in the daemon and none answered: slower than the interval itself."""
        return self.ops == 0 and self.in_flight > 0

    def judged_ms(self) -> float | None:
        """The figure the straggler rule compares: the daemon's time per request
        (or the ranks' wait on a posix: target); a stalled node's is at least the
        whole interval."""
        if self.stalled:
            return self.seconds * 1000
        if self.ops == 0:
            return None
        return self.server_ms if self.server_ms is not None else self.client_ms


def _timing(stats: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    timing = stats.get("timing") or {}
    return {op: times for op, times in timing.items() if op not in OWN_OPS}


def _hist(rows: Any) -> dict[float, int]:
    return {float(upper): int(count) for upper, count in rows or []}


def p99_ms(before: Mapping[float, int], after: Mapping[float, int]) -> float | None:
    """The 99th percentile of the interval from two cumulative histograms
    (``upper_us -> count``): the upper bound of the bucket that holds it."""
    counts = {upper: after[upper] - before.get(upper, 0) for upper in after}
    total = sum(counts.values())
    if total <= 0:
        return None
    seen = 0
    for upper in sorted(counts):
        seen += counts[upper]
        if seen >= 0.99 * total:
            return upper / 1000
    return None


def daemon_interval(
    node: str, host: str | None, before: Mapping[str, Any], after: Mapping[str, Any],
    seconds: float,
    pings: tuple[tuple[int, int, int], tuple[int, int, int]] = ((0, 0, 0), (0, 0, 0)),
) -> NodeFigures:  # fmt: skip
    """The interval between two stats replies of one daemon; ``pings``: the
    sampler's (count, total round trip ns empty, carrying 64 KiB) of it at each."""
    old, new = _timing(before), _timing(after)
    sums = {"answered": 0, "queue_ns": 0, "storage_ns": 0, "server_ns": 0}
    stored = 0
    server_old: dict[float, int] = {}
    server_new: dict[float, int] = {}
    storage_old: dict[float, int] = {}
    storage_new: dict[float, int] = {}
    for op, times in new.items():
        prior = old.get(op, {})
        for key in sums:
            sums[key] += int(times.get(key, 0)) - int(prior.get(key, 0))
        for target, rows in ((server_new, times.get("server_hist_us")),
                             (storage_new, times.get("storage_hist_us")),
                             (server_old, prior.get("server_hist_us")),
                             (storage_old, prior.get("storage_hist_us"))):  # fmt: skip
            for upper, count in _hist(rows).items():
                target[upper] = target.get(upper, 0) + count
    stored = sum(storage_new.values()) - sum(storage_old.values())
    ops = max(0, sums["answered"])
    pinged = pings[1][0] - pings[0][0]
    moved = sum(
        int(after.get(key, 0)) - int(before.get(key, 0)) for key in ("bytes_in", "bytes_out")
    )
    return NodeFigures(
        node=node,
        host=host,
        seconds=seconds,
        ops=ops,
        in_flight=int(after.get("in_flight", 0)) + int(after.get("queue_depth", 0)),
        server_ms=sums["server_ns"] / ops / 1e6 if ops else None,
        queue_ms=sums["queue_ns"] / ops / 1e6 if ops else None,
        storage_op_ms=sums["storage_ns"] / stored / 1e6 if stored > 0 else None,
        server_p99_ms=p99_ms(server_old, server_new),
        storage_p99_ms=p99_ms(storage_old, storage_new),
        mib_s=max(0, moved) / MIB / seconds if seconds > 0 else 0.0,
        rtt_ms=(pings[1][1] - pings[0][1]) / pinged / 1e6 if pinged > 0 else None,
        bulk_rtt_ms=(pings[1][2] - pings[0][2]) / pinged / 1e6 if pinged > 0 else None,
        kernel=kernel_interval(before.get("kernel") or {}, after.get("kernel") or {}),
    )


def ranks_interval(
    node: str, before: Sequence[tuple[int, int]], after: Sequence[tuple[int, int]],
    seconds: float, queue_depth: int, running: int,
) -> NodeFigures:  # fmt: skip
    """The interval between two readings of one node's ranks' progress records
    (``(bytes, ops)`` per rank); ``running``: its ranks not yet through their share."""
    moved = sum(b for b, _ in after) - sum(b for b, _ in before)
    ops = max(0, sum(o for _, o in after) - sum(o for _, o in before))
    waiting = running * queue_depth
    client = waiting * seconds * 1000 / ops if ops else None
    return NodeFigures(
        node=node, host=node, seconds=seconds, ops=ops, in_flight=waiting if ops == 0 else 0,
        client_ms=client, mib_s=max(0, moved) / MIB / seconds if seconds > 0 else 0.0,
    )  # fmt: skip
