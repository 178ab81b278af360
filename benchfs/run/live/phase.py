"""One phase as the live view saw it: its readings in time order, the
interval figures of every node between them, and the judge over those."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from benchfs.run.live.devices import LiveDevices
from benchfs.run.live.figures import NodeFigures, daemon_interval, ranks_interval
from benchfs.run.live.rule import Events, PhaseJudge, Rule
from benchfs.run.live.sampler import Reading
from benchfs.workload.spec import WorkloadSpec


@dataclass
class PhaseRun:
    repetition: int
    phase: str
    # The phase's start (the ranks' phase file): every time is seconds since then.
    since_unix_ns: int
    first: Reading
    last: Reading
    judge: PhaseJudge
    hosts: dict[str, str] = field(default_factory=dict)
    ended: bool = False
    readings: list[Reading] = field(default_factory=list)
    # The nodes' data devices as the run's iostat sees them; None: not watched.
    devices: LiveDevices | None = None

    @classmethod
    def begin(
        cls, reading: Reading, rule: Rule, hosts: dict[str, str],
        devices: LiveDevices | None = None,
    ) -> PhaseRun:  # fmt: skip
        assert reading.phase is not None
        status = reading.phase
        return cls(status.repetition, status.phase, status.since_unix_ns, reading, reading,
                   PhaseJudge(rule), dict(hosts), readings=[reading],
                   devices=devices)  # fmt: skip

    def seconds(self, reading: Reading) -> float:
        return max(0.0, (reading.unix_ns - self.since_unix_ns) / 1e9)

    def seconds_now(self) -> float:
        return max(0.0, (time.time_ns() - self.since_unix_ns) / 1e9)

    def owns(self, reading: Reading) -> bool:
        status = reading.phase
        return status is not None and (status.repetition, status.phase) == (
            self.repetition,
            self.phase,
        )

    def between(
        self, spec: WorkloadSpec, before: Reading, after: Reading
    ) -> dict[str, NodeFigures]:
        """Every node's figures from ``before`` to ``after``."""
        seconds = (after.unix_ns - before.unix_ns) / 1e9
        if after.daemons or before.daemons:
            none = (0, 0, 0)
            daemons = {
                node: daemon_interval(
                    node,
                    self.hosts.get(node),
                    before.daemons[node],
                    stats,
                    seconds,
                    pings=(before.pings.get(node, none), after.pings.get(node, none)),
                )
                for node, stats in after.daemons.items()
                if node in before.daemons
            }
            return {node: self._with_device(f, before, after) for node, f in daemons.items()}
        share = (
            after.phase.expected_bytes / spec.ranks
            if after.phase is not None
            and after.phase.expected_bytes
            and not after.phase.stonewall_s
            else None
        )
        found = {}
        for host, records in after.ranks.items():
            running = sum(1 for done, _ in records if share is None or done < share)
            found[host] = ranks_interval(host, before.ranks.get(host, []), records, seconds,
                                         spec.queue_depth, running)  # fmt: skip
        return found

    def _with_device(self, figures: NodeFigures, before: Reading, after: Reading) -> NodeFigures:
        """``figures`` with the iostat of the node's data device over the interval."""
        if self.devices is None:
            return figures
        op = self.phase if self.phase in ("read", "write") else None
        device = self.devices.figures(figures.host, figures.kernel, before.unix_ns / 1e9,
                                      after.unix_ns / 1e9, op)  # fmt: skip
        if device is None:
            return figures
        return replace(figures, await_ms=device.await_ms, util_pct=device.util_pct,
                       device_mb_s=device.device_mb_s)  # fmt: skip

    def add(self, spec: WorkloadSpec, reading: Reading) -> Events:
        """The next reading of this phase: judge the interval since the last."""
        figures = self.between(spec, self.last, reading)
        events = self.judge.interval(self.seconds(self.last), self.seconds(reading), figures)
        self.last = reading
        self.readings.append(reading)
        return events

    def whole(self, spec: WorkloadSpec) -> dict[str, NodeFigures]:
        """Every node over the phase: its first reading to its last."""
        return self.between(spec, self.first, self.last)

    def span(
        self, spec: WorkloadSpec, onset_s: float, end_s: float | None
    ) -> dict[str, NodeFigures]:
        """Every node over a slow span: from the start of its first slow interval
        (the reading before the onset's) to its end (or the phase's)."""
        times = [self.seconds(reading) for reading in self.readings]
        at = max((i for i, t in enumerate(times) if t <= onset_s + 1e-6), default=0)
        start = self.readings[max(0, at - 1)]
        ends = [i for i, t in enumerate(times) if end_s is not None and t >= end_s - 1e-6]
        end = self.readings[ends[0]] if ends else self.last
        return self.between(spec, start, end) if end is not start else self.whole(spec)
