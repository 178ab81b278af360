"""The layer that adds a slow node's time, with its figures: pure, figures in,
verdict out.

A node's time per op is split into the layers BenchFS sees, each against the
median of the other nodes (``LayerSample``): the clients' wait on its daemon
less the daemon's own time (the network and the RPC layer; a slow round trip
of a request the daemon answers at once makes it the network), the daemon's
queue, the storage op above the device (the kernel: submission to completion
less the device's await) and the device's await. Time in an upper layer is
often the back-pressure of a lower one (requests queue while slots are held
by slow storage ops), so the verdict names the deepest layer that is
markedly slower than on the other nodes, then asks the kernel's view of the
daemon's process (``kernel_evidence``): a cgroup I/O limit on the data
device keeps the time in the kernel, a starved CPU or a memory stall takes
it from the layers the daemon's threads run in, and a device busy with I/O
that is not the job's is contention from outside the job. "The software
explains it" is said only when the engine's own layers (``SOFTWARE_LAYERS``)
hold the time.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from analysis.figures import figure
from analysis.verdicts import SOFTWARE_LAYERS, Layer, LayerTime
from benchfs.health.kernel_evidence import (
    Evidence,
    cpu_evidence,
    io_limits,
    io_pressure,
    memory_evidence,
)

# A layer is markedly slower when it takes this many times the others' time...
SLOW_FACTOR = 2.0
# ...and holds this share of the node's extra time per op.
SLOW_SHARE = 0.2
# A round trip that is this share of the extra client-side time makes it the network.
RTT_SHARE = 0.25
# The device busy with other I/O: its total at least this many times the job's
# own bytes/s, and at least this many MB/s more.
CONTENTION_FACTOR = 2.0
CONTENTION_MIN_MB_S = 5.0
BUSY_UTIL_PCT = 50.0
_HANDLING = "daemon's own handling (its time less queue and storage op)"


@dataclass(frozen=True)
class LayerSample:
    """One node over one interval or one phase; ms per op unless said."""

    ops: int
    # The clients' wait per op on this node's daemon (ranks).
    client_ms: float | None = None
    # The daemon's time per request, arrival to reply sent.
    server_ms: float | None = None
    # In the daemon before its storage op started.
    queue_ms: float | None = None
    # The storage op, submission to completion.
    storage_op_ms: float | None = None
    # A request the daemon answers at once (ping), when measured; and one carrying
    # 64 KiB to the daemon, as a write's data goes.
    rtt_ms: float | None = None
    bulk_rtt_ms: float | None = None
    # iostat of the node's data device, and the job's own bytes/s on it.
    await_ms: float | None = None
    util_pct: float | None = None
    device_mb_s: float | None = None
    job_mb_s: float | None = None
    # The "kernel" object of the daemon's stats reply (``kernel_interval`` of two).
    kernel: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Attribution:
    """Where the extra time is: the layer, each layer's time against the
    others', the evidence in words and one sentence as an admin says it."""

    layer: Layer
    layers: list[LayerTime]
    evidence: list[str]
    sentence: str

    @property
    def software(self) -> bool:
        return self.layer in SOFTWARE_LAYERS


@dataclass(frozen=True)
class _Row:
    layer: Layer
    label: str
    node: float | None
    others: float | None

    @property
    def extra(self) -> float | None:
        return None if self.node is None or self.others is None else self.node - self.others

    def slow(self, total_extra: float) -> bool:
        extra = self.extra
        if extra is None or extra <= 0 or extra < SLOW_SHARE * total_extra:
            return False
        return not self.others or (self.node is not None and self.node >= SLOW_FACTOR * self.others)


def attribute(node: LayerSample, others: Sequence[LayerSample]) -> Attribution:
    """The layer that holds ``node``'s extra time per op against ``others``."""
    rows = _rows(node, others, _rtt_slow(node, others))
    total = _total(node, others)
    total_extra = max([total.extra or 0.0] + [row.extra or 0.0 for row in rows])
    cause = next((row for row in rows if row.slow(total_extra)), None)
    kernels = [other.kernel for other in others]
    cpu = cpu_evidence(node.kernel, kernels)
    memory = memory_evidence(node.kernel, kernels)
    contention = busy_with_others(node)
    layers = [_layer_time(row) for row in rows] + [
        LayerTime(layer=ev.layer, node=ev.node, others=ev.others, unit=ev.unit)
        for ev in (cpu, memory, contention)
        if ev is not None
    ]
    figures = _figures(node, others)

    def verdict(layer: Layer, sentence: str, lines: Sequence[str] = ()) -> Attribution:
        return Attribution(layer, layers, figures + list(lines), sentence)

    def starved(what: str) -> Attribution | None:
        for ev, words in (
            (cpu, "the daemon is starved of CPU"),
            (memory, "the daemon stalls on memory"),
        ):
            if ev is not None:
                return verdict(ev.layer, f"{what}: {words}; {'; '.join(ev.lines)}", ev.lines)
        return None

    if cause is None:
        what = f"{total.label} +{figure(total.extra)} ms"
        return starved(what) or verdict(
            "unknown",
            f"{what} and no layer BenchFS sees holds it (client wait less the daemon's time, "
            "queue, storage op, device await)",
        )
    extra = f"{cause.label} +{figure(cause.extra)} ms"
    if cause.layer == "device":
        if contention is not None:
            sentence = f"{extra} with {contention.lines[0]}: contention from outside the job"
            return verdict("contention", sentence, contention.lines)
        return verdict("device", f"{extra}{_util(node)}: the device itself is slow")
    if cause.layer == "kernel":
        return _kernel(node, others, verdict, starved)

    def on_the_wire(bandwidth: bool) -> Attribution | None:
        slow_wire = (
            _wire_holds(node, others, cause, bandwidth) if cause.label == _HANDLING else None
        )
        if slow_wire is None:
            return None
        return verdict(
            "network",
            f"{extra} with {slow_wire}: the network between the clients and the daemon "
            "(a write's data comes over it while the daemon handles the request)",
        )

    # The data's time to reach the daemon first: a daemon slow to answer delays both
    # pings alike, so their difference is the link's whatever the CPU does.
    found = on_the_wire(bandwidth=True) or starved(extra) or on_the_wire(bandwidth=False)
    if found is not None:
        return found
    if cause.layer == "network":
        typical = figure(_median(others, lambda s: s.rtt_ms))
        return verdict(
            "network",
            f"{extra} with a round trip of {figure(node.rtt_ms)} ms vs {typical} ms on the "
            "others: the network between the clients and the daemon",
        )
    if cause.layer == "queue":
        return verdict(
            "queue",
            f"{extra} with the storage op and the device normal: the "
            "software explains it (the daemon's queue)",
        )
    if cause.label == _HANDLING:
        return verdict(
            "rpc",
            f"{extra}: the software explains it (the daemon's handling of a "
            "request outside its queue and storage op)",
        )
    return verdict(
        "rpc",
        f"{extra} with the daemon's own time and the round trip normal: the "
        "software explains it (the engine's RPC layer)",
    )


_Verdict = Callable[[Layer, str, Sequence[str]], Attribution]


def _kernel(
    node: LayerSample,
    others: Sequence[LayerSample],
    verdict: _Verdict,
    starved: Callable[[str], Attribution | None],
) -> Attribution:
    """The storage op slow above the device: a cgroup's I/O limit, a starved
    CPU or a memory stall where the kernel shows one, else the kernel's I/O path."""
    storage = _Row(
        "kernel", "storage op", node.storage_op_ms, _median(others, lambda s: s.storage_op_ms)
    )
    extra = f"storage op +{figure(storage.extra)} ms"
    if node.await_ms is None:
        normal = "with no iostat of the device"
    else:
        typical = _median(others, lambda s: s.await_ms)
        against = f" vs {figure(typical)} ms on the others" if typical is not None else ""
        normal = f"while the device's await is normal ({figure(node.await_ms)} ms{against})"
    limits = io_limits(node.kernel)
    if limits:
        return verdict(
            "kernel",
            f"{extra} {normal}: delayed in the kernel above the device; {limits[0]}",
            limits,
        )
    found = starved(f"{extra} {normal}")
    if found is not None:
        return found
    # A device saturated with others' I/O queues the job's requests above it too
    # (its file system, the block layer), where the device's await does not count them.
    contention = busy_with_others(node)
    if contention is not None:
        return verdict(
            "contention",
            f"{extra} {normal} with {contention.lines[0]}: contention from outside the job",
            contention.lines,
        )
    if node.await_ms is None:
        return verdict(
            "unknown", f"{extra} {normal}: the device cannot be told from the kernel above it", ()
        )
    pressure = io_pressure(node.kernel)
    tail = f" ({pressure})" if pressure else " (no I/O limit on the daemon's cgroup)"
    lines = [pressure] if pressure else []
    return verdict(
        "kernel", f"{extra} {normal}: delayed in the kernel above the device{tail}", lines
    )


def _figures(node: LayerSample, others: Sequence[LayerSample]) -> list[str]:
    """The node's figures against the others' median, in words."""
    shown: list[tuple[str, Callable[[LayerSample], float | None], str]] = [
        ("client wait", lambda s: s.client_ms, "ms"),
        ("daemon time", lambda s: s.server_ms, "ms"),
        ("daemon queue", lambda s: s.queue_ms, "ms"),
        ("storage op", lambda s: s.storage_op_ms, "ms"),
        ("device await", lambda s: s.await_ms, "ms"),
        ("device util", lambda s: s.util_pct, "%"),
        ("round trip", lambda s: s.rtt_ms, "ms"),
        ("64 KiB ping", lambda s: s.bulk_rtt_ms, "ms"),
    ]
    lines = []
    for label, of, unit in shown:
        value = of(node)
        if value is None:
            continue
        typical = _median(others, of)
        against = f" vs {figure(typical)} {unit} on the others" if typical is not None else ""
        lines.append(f"{label} {figure(value)} {unit}{against}")
    return lines


def _rows(node: LayerSample, others: Sequence[LayerSample], rtt_slow: bool) -> list[_Row]:
    """The layers, the deepest first."""

    def row(layer: Layer, label: str, of: Callable[[LayerSample], float | None]) -> _Row:
        return _Row(layer, label, of(node), _median(others, of))

    wire: Layer = "network" if rtt_slow else "rpc"
    return [
        row("device", "device await", lambda s: s.await_ms),
        row("kernel", "storage op less the device's await", _above_device),
        row("queue", "daemon queue", lambda s: s.queue_ms),
        row("rpc", _HANDLING, _handling),
        row(wire, "client wait less the daemon's time", _wire),
    ]


def _total(node: LayerSample, others: Sequence[LayerSample]) -> _Row:
    totals: list[tuple[str, Callable[[LayerSample], float | None]]] = [
        ("client wait", lambda s: s.client_ms),
        ("daemon time", lambda s: s.server_ms),
        ("storage op", lambda s: s.storage_op_ms),
    ]
    for label, of in totals:
        if of(node) is not None:
            return _Row("unknown", label, of(node), _median(others, of))
    return _Row("unknown", "time per op", None, None)


def _rtt_slow(node: LayerSample, others: Sequence[LayerSample]) -> bool:
    if node.rtt_ms is None:
        return False
    wire = _wire(node)
    typical = _median(others, lambda s: s.rtt_ms)
    typical_wire = _median(others, _wire)
    if typical is None:
        return wire is not None and node.rtt_ms >= RTT_SHARE * wire
    wire_extra = (wire or 0.0) - (typical_wire or 0.0)
    return node.rtt_ms >= SLOW_FACTOR * typical and node.rtt_ms - typical >= RTT_SHARE * wire_extra


def _wire_holds(
    node: LayerSample, others: Sequence[LayerSample], cause: _Row, bandwidth: bool
) -> str | None:
    """The network to the daemon slow enough to hold a share of ``cause``'s extra
    time (the daemon's handling, which receives a write's data), in words: the
    time 64 KiB takes to reach it over an empty ping's (``bandwidth``), else its
    round trip (latency)."""

    def carry(sample: LayerSample) -> float | None:
        if sample.bulk_rtt_ms is None or sample.rtt_ms is None:
            return None
        return max(sample.bulk_rtt_ms - sample.rtt_ms, 0.0)

    of: Callable[[LayerSample], float | None]
    if bandwidth:
        of, words = carry, "64 KiB taking {} ms more than an empty ping to reach it"
    else:
        of, words = (lambda s: s.rtt_ms), "a round trip of {} ms"
    mine, typical = of(node), _median(others, of)
    if mine is None or typical is None or cause.extra is None:
        return None
    if mine >= SLOW_FACTOR * typical and mine - typical >= RTT_SHARE * cause.extra:
        return f"{words.format(figure(mine))} vs {figure(typical)} ms on the others"
    return None


def busy_with_others(node: LayerSample, whose: str = "the job's") -> Evidence | None:
    """The device busy with I/O that is not the job's (iostat's total well above
    the job's own bytes/s on it)."""
    total, own = node.device_mb_s, node.job_mb_s
    if total is None or own is None:
        return None
    foreign = total - own
    if total < CONTENTION_FACTOR * own or foreign < CONTENTION_MIN_MB_S:
        return None
    if node.util_pct is not None and node.util_pct < BUSY_UTIL_PCT:
        return None
    line = (
        f"the device busy with others' I/O: {figure(total)} MB/s on it against {whose} own "
        f"{figure(own)} MB/s{_util(node)}"
    )
    return Evidence("contention", foreign, 0.0, "MB/s not the job's", (line,))


def _util(node: LayerSample) -> str:
    return f" (util {figure(node.util_pct)} %)" if node.util_pct is not None else ""


def _wire(sample: LayerSample) -> float | None:
    if sample.client_ms is None or sample.server_ms is None:
        return None
    return max(sample.client_ms - sample.server_ms, 0.0)


def _handling(sample: LayerSample) -> float | None:
    if sample.server_ms is None:
        return None
    inside = (sample.queue_ms or 0.0) + (sample.storage_op_ms or 0.0)
    return max(sample.server_ms - inside, 0.0)


def _above_device(sample: LayerSample) -> float | None:
    if sample.storage_op_ms is None:
        return None
    return max(sample.storage_op_ms - (sample.await_ms or 0.0), 0.0)


def _median(
    samples: Sequence[LayerSample], of: Callable[[LayerSample], float | None]
) -> float | None:
    values = [value for sample in samples if (value := of(sample)) is not None]
    return statistics.median(values) if values else None


def _layer_time(row: _Row) -> LayerTime:
    return LayerTime(layer=row.layer, node=row.node, others=row.others)
