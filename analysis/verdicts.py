"""Per-node verdicts of a run: ``verdicts.json`` (``analysis.layout.VERDICTS``).

One verdict per node, phase and repetition that was judged, healthy nodes
included (``status = "ok"``), so a history of runs sees every node every
time. A slow node's verdict says in which layer the extra time was
(``Layer``), its time pattern (``Pattern``: the whole phase, from an onset
to the end, intermittent with its intervals, or recovered), its figures
against the other nodes', the evidence in words and the alerts raised while
the phase ran. A read/write asymmetry of one node is a verdict of its own
(``kind = "asymmetry"``): there the node's slower op is compared with its
faster one instead of with the other nodes.

Written by the run (``benchfs.run``) from its live figures and traces, read
back by ``analysis.loaders.verdicts``; the report and the history of runs
read the same model. Times are seconds since the phase started.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

FORMAT: Literal["benchfs-verdicts"] = "benchfs-verdicts"
VERSION: Literal[1] = 1

# Where the extra time of a slow node was:
# - client: the client's own side, before its request left or after its reply came;
# - network: between client and daemon (client time minus the daemon's), with the
#   round trip of a request the daemon answers at once as its evidence;
# - rpc: client time minus the daemon's without a slow round trip (the engine's RPC layer);
# - queue: the request waiting in the daemon (for a slot, a buffer, the ring);
# - kernel: the storage op (submission to completion) slow while the device is not:
#   delayed in the kernel above the device (an I/O throttle, a congested block layer);
# - device: the device's own await;
# - contention: the device busy with I/O that is not the job's;
# - cpu: the daemon's threads waiting for a CPU (run queue, steal, a cgroup's quota);
# - memory: the daemon stalled on memory (reclaim, memory pressure);
# - unknown: slow, and no layer holds the time.
Layer = Literal[
    "client", "network", "rpc", "queue", "kernel", "device", "contention", "cpu", "memory",
    "unknown",
]  # fmt: skip
LAYERS: tuple[str, ...] = (
    "client", "network", "rpc", "queue", "kernel", "device", "contention", "cpu", "memory",
    "unknown",
)  # fmt: skip
# The layers that are the engine's own software: only these make "the software explains it".
SOFTWARE_LAYERS: frozenset[str] = frozenset({"client", "rpc", "queue"})

# none: never slow; whole: slow from the start to the end; onset: from onset_s to the end;
# intermittent: slow in two or more intervals; recovered: one interval that ended before the
# phase did.
Pattern = Literal["none", "whole", "onset", "intermittent", "recovered"]
PATTERNS: tuple[str, ...] = ("none", "whole", "onset", "intermittent", "recovered")

# What a straggler does to the run (live.straggler): a warning, the run stopped, or the
# node left out from the next point of a sweep on.
Action = Literal["warn", "stop", "exclude"]
Status = Literal["ok", "slow"]
# node: the node against the other nodes; asymmetry: the node's slower op against its faster.
Kind = Literal["node", "asymmetry"]
# What the figures came from: the run's per-second live samples, the engine's traces, iostat.
Source = Literal["live", "traces", "iostat"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Interval(_Model):
    """A stretch of slow seconds; ``end_s`` None: to the end of the phase."""

    start_s: float
    end_s: float | None = None


class Figures(_Model):
    """The judged metric on the node against the others (median over the
    other nodes; for an asymmetry, the node's faster op)."""

    unit: str
    p50: float | None = None
    p99: float | None = None
    others_p50: float | None = None
    others_p99: float | None = None

    @property
    def ratio(self) -> float | None:
        """The node's p50 over the others' (how many times slower)."""
        if self.p50 is None or not self.others_p50:
            return None
        return self.p50 / self.others_p50


class LayerTime(_Model):
    """Mean time per op in one layer on the node against the others, in ms
    (for ``cpu``/``memory``/``contention``: the layer's own figure and unit)."""

    layer: Layer
    node: float | None = None
    others: float | None = None
    unit: str = "ms"

    @property
    def extra(self) -> float | None:
        if self.node is None or self.others is None:
            return None
        return self.node - self.others


class Alert(_Model):
    """A node named while its phase ran."""

    node: str
    phase: str
    repetition: int = 0
    metric: str
    layer: Layer
    # First slow second, and when the alert was raised (raised_s - onset_s: the delay).
    onset_s: float
    raised_s: float
    onset_unix_ns: int
    value: float
    others: float
    unit: str
    action: Action
    # The line shown in the terminal and the log.
    message: str
    evidence: list[str] = []
    # When the node was no longer slow, if it recovered while the phase ran.
    ended_s: float | None = None


class NodeVerdict(_Model):
    """One node in one phase run: healthy, or slow with where, since when and why."""

    node: str
    # The host the node's daemon (or ranks) ran on, when known.
    host: str | None = None
    phase: str
    repetition: int = 0
    kind: Kind = "node"
    # The metric judged: "storage_op_ms", "server_ms", "rtt_ms", "client_wait_ms", "await_ms"...
    metric: str
    op: Literal["read", "write"] | None = None
    status: Status
    layer: Layer | None = None
    pattern: Pattern = "none"
    onset_s: float | None = None
    intervals: list[Interval] = []
    figures: Figures
    layers: list[LayerTime] = []
    evidence: list[str] = []
    alerts: list[Alert] = []
    source: Source = "live"
    # One sentence, as an administrator would say it.
    verdict: str


class Verdicts(_Model):
    """The document: every node judged, and the verdicts."""

    format: Literal["benchfs-verdicts"] = FORMAT
    version: Literal[1] = VERSION
    # Seconds between live samples (0 when the verdicts come from traces alone).
    interval_s: float = Field(default=1.0, ge=0)
    nodes: list[str] = []
    verdicts: list[NodeVerdict] = []

    def slow(self) -> list[NodeVerdict]:
        return [verdict for verdict in self.verdicts if verdict.status == "slow"]

    def alerts(self) -> list[Alert]:
        return [alert for verdict in self.verdicts for alert in verdict.alerts]

    def to_json(self) -> str:
        return self.model_dump_json(indent=1)
