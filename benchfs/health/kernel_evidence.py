"""What the kernel says about a daemon's own process, from the ``kernel``
object of its stats reply (docs/RPC.md, "Kernel"), in words.

The object is read by the daemon on its own node, so each node's figures
are its own even when the nodes are different hosts. Counters in it are
cumulative; ``kernel_interval`` turns two replies into the change over the
interval between them (an ``interval`` key), and the judgements below use
the interval where there is one, else the cumulative figures (since the
daemon started, which is a run's phases).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from analysis.figures import figure
from analysis.verdicts import Layer

MIB = 1 << 20
# The daemon's threads waiting for a CPU this share of their runnable time
# (run delay over run time plus run delay) is starvation...
CPU_WAIT_SHARE = 0.5
# ...when it is also this many times the other nodes'. On a loaded machine every
# daemon waits, and unevenly (43 % against 20 % with no daemon starved): a wait
# below both marks is no evidence without a cgroup's throttling or steal.
CPU_WAIT_FACTOR = 3.0
# A cgroup throttled in this share of its CPU periods caps the daemon.
CPU_THROTTLED_SHARE = 0.05
# Steal (the hypervisor ran someone else) this share of the CPU time.
STEAL_SHARE = 0.10
# Pressure stall (some, avg10, percent) that counts as a stall of the daemon.
PRESSURE_PCT = 10.0
# The limits of an io_limits object: key, what is limited, the unit.
_LIMITS = (
    ("read_bps", "reads", "bps"),
    ("write_bps", "writes", "bps"),
    ("read_iops", "reads", "iops"),
    ("write_iops", "writes", "iops"),
)
# Counters the interval is taken of: path in the kernel object.
_COUNTERS: tuple[tuple[str, ...], ...] = (
    ("time_ns",),
    ("process", "run_ns"),
    ("process", "run_delay_ns"),
    ("cpu", "steal_ticks"),
    ("cpu", "total_ticks"),
    ("memory", "pgscan"),
    ("memory", "pgsteal"),
    ("cgroup", "cpu", "nr_periods"),
    ("cgroup", "cpu", "nr_throttled"),
    ("cgroup", "cpu", "throttled_ns"),
)


@dataclass(frozen=True)
class Evidence:
    """One layer's case: its figure on the node and the others, and the words."""

    layer: Layer
    node: float | None
    others: float | None
    unit: str
    lines: tuple[str, ...]


def kernel_interval(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """``after`` with an ``interval`` key: every cumulative counter's change
    since ``before`` (two stats replies of the same daemon)."""
    change: dict[str, Any] = {}
    for path in _COUNTERS:
        now, then = _number(after, *path), _number(before, *path)
        if now is not None and then is not None and now >= then:
            change["_".join(path[-2:]) if path[0] == "cgroup" else path[-1]] = now - then
    return {**after, "interval": change}


def io_limits(kernel: Mapping[str, Any]) -> list[str]:
    """The I/O limits of the daemon's cgroup on its data device, in words
    ("the daemon's cgroup caps reads on vda at 20 MiB/s")."""
    limits = _dig(kernel, "cgroup", "io_limits")
    if not isinstance(limits, Mapping):
        return []
    device = _dig(kernel, "device", "name") or _dig(kernel, "device", "disk") or "its device"
    parts = []
    for key, what, unit in _LIMITS:
        value = limits.get(key)
        if isinstance(value, int | float) and value > 0:
            shown = f"{figure(value / MIB)} MiB/s" if unit == "bps" else f"{value:,.0f} IOPS"
            parts.append(f"{what} on {device} at {shown}")
    if not parts:
        return []
    where = limits.get("cgroup")
    source = limits.get("source")
    detail = f" ({source} of {where})" if source and where else ""
    return [f"the daemon's cgroup caps {' and '.join(parts)}{detail}"]


def cpu_evidence(node: Mapping[str, Any], others: Sequence[Mapping[str, Any]]) -> Evidence | None:
    """The daemon starved of CPU: its cgroup's quota throttling it, its threads
    waiting on a run queue far more than the other daemons', or steal."""
    lines = []
    share = _run_wait_share(node)
    typical = _median([s for other in others if (s := _run_wait_share(other)) is not None])
    if (
        share is not None
        and share >= CPU_WAIT_SHARE
        and (typical is None or share >= CPU_WAIT_FACTOR * typical)
    ):
        against = f" vs {typical:.0%} on the others" if typical is not None else ""
        lines.append(
            f"its threads waited for a CPU {share:.0%} of their runnable time{against} "
            "(run delay, schedstat)"
        )
    throttled = _throttled_share(node)
    quota = _number(node, "cgroup", "cpu", "quota_us")
    period = _number(node, "cgroup", "cpu", "period_us")
    if throttled is not None and throttled >= CPU_THROTTLED_SHARE and quota and quota > 0:
        cpus = f"{figure(quota / period)} CPU " if period else ""
        lines.append(
            f"its cgroup's CPU quota ({cpus}cpu.cfs_quota_us {quota:.0f}"
            f"{f' per {period:.0f}' if period else ''}) throttled it in {throttled:.0%} "
            "of its periods"
        )
    steal = _steal_share(node)
    if steal is not None and steal >= STEAL_SHARE:
        lines.append(f"steal {steal:.0%} of the CPU time (/proc/stat)")
    pressure = _pressure(node, "cpu")
    if lines and pressure is not None and pressure[0] >= PRESSURE_PCT:
        lines.append(f"{pressure[1]} cpu pressure some avg10 {figure(pressure[0])} %")
    if not lines:
        return None
    return Evidence("cpu", _pct(share), _pct(typical), "% of runnable time waiting", tuple(lines))


def memory_evidence(
    node: Mapping[str, Any], others: Sequence[Mapping[str, Any]]
) -> Evidence | None:
    """The daemon stalled on memory: memory pressure on it (its cgroup's, else
    the node's) well above the other nodes', with reclaim where it ran."""
    pressure = _pressure(node, "memory")
    if pressure is None or pressure[0] < PRESSURE_PCT:
        return None
    typical = _median([p[0] for other in others if (p := _pressure(other, "memory"))])
    if typical is not None and pressure[0] < 2 * typical:
        return None
    against = f" vs {figure(typical)} % on the others" if typical is not None else ""
    lines = [f"{pressure[1]} memory pressure some avg10 {figure(pressure[0])} %{against}"]
    scanned = _counter(node, ("memory", "pgscan"), "pgscan")
    if scanned:
        lines.append(f"the kernel scanned {scanned:,.0f} pages to reclaim (/proc/vmstat pgscan)")
    return Evidence("memory", pressure[0], typical, "% memory pressure", tuple(lines))


def io_pressure(kernel: Mapping[str, Any]) -> str | None:
    pressure = _pressure(kernel, "io")
    if pressure is None or pressure[0] < PRESSURE_PCT:
        return None
    return f"{pressure[1]} io pressure some avg10 {figure(pressure[0])} %"


def _run_wait_share(kernel: Mapping[str, Any]) -> float | None:
    run = _counter(kernel, ("process", "run_ns"), "run_ns")
    delay = _counter(kernel, ("process", "run_delay_ns"), "run_delay_ns")
    if run is None or delay is None or run + delay <= 0:
        return None
    return delay / (run + delay)


def _throttled_share(kernel: Mapping[str, Any]) -> float | None:
    periods = _counter(kernel, ("cgroup", "cpu", "nr_periods"), "cpu_nr_periods")
    throttled = _counter(kernel, ("cgroup", "cpu", "nr_throttled"), "cpu_nr_throttled")
    if not periods or throttled is None:
        return None
    return throttled / periods


def _steal_share(kernel: Mapping[str, Any]) -> float | None:
    steal = _counter(kernel, ("cpu", "steal_ticks"), "steal_ticks")
    total = _counter(kernel, ("cpu", "total_ticks"), "total_ticks")
    if steal is None or not total:
        return None
    return steal / total


def _pressure(kernel: Mapping[str, Any], resource: str) -> tuple[float, str] | None:
    """The ``some avg10`` stall percentage of the daemon's cgroup where the
    kernel keeps one, else of its node, and whose it is."""
    owners = ((("cgroup", "pressure"), "the daemon's cgroup"), (("pressure",), "the node's"))
    for where, owner in owners:
        value = _number(kernel, *where, resource, "some", "avg10")
        if value is not None:
            return value, owner
    return None


def _counter(kernel: Mapping[str, Any], path: tuple[str, ...], interval_key: str) -> float | None:
    """A counter's change over the interval where there is one, else its total."""
    interval = kernel.get("interval")
    if isinstance(interval, Mapping) and interval:
        value = interval.get(interval_key)
        return float(value) if isinstance(value, int | float) else None
    return _number(kernel, *path)


def _number(kernel: Mapping[str, Any], *path: str) -> float | None:
    value = _dig(kernel, *path)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _dig(kernel: Mapping[str, Any], *path: str) -> Any:
    value: Any = kernel
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _pct(share: float | None) -> float | None:
    return None if share is None else 100.0 * share
