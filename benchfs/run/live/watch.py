"""The live view as one of a point's watches (``benchfs.run.watch``).

Started before the ranks, it starts the sampler; each poll judges the
readings that came in (``PhaseRun``), names a straggler as it is found (the
progress display, ``logs/live.log``, the manifest's ``live`` record), and
does what ``live.straggler`` says: warn, stop the run, or leave the node out
of the sweep's next points. At each phase's end, and at its stop, it writes
``verdicts.json`` with every node of every phase so far.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import IO, Any

from analysis.layout import RunLayout
from analysis.manifest import LiveRecord, LiveRule
from analysis.verdicts import Alert, NodeVerdict, Verdicts
from benchfs.config.model import LiveConfig
from benchfs.errors import LaunchError
from benchfs.results.manifest import ExcludedHost, ManifestRecorder
from benchfs.run.live.devices import LiveDevices, ReportOf
from benchfs.run.live.figures import NodeFigures
from benchfs.run.live.layer import where
from benchfs.run.live.phase import PhaseRun
from benchfs.run.live.rule import Judged, Rule, Span
from benchfs.run.live.sampler import Reading, Sampler
from benchfs.run.live.verdicts import METRICS, phase_verdicts, quoted_metric
from benchfs.run.observer import RunObserver
from benchfs.workload.spec import WorkloadSpec

# A node named on the display: "local3: storage op 194 ms vs 1.1 ms on the others, since 00:10".
SHORT = {
    "storage_op_ms": "storage op",
    "queue_ms": "queue",
    "server_ms": "request time",
    "client_ms": "op time",
}
# A node left out from the next point on: called with its host and the evidence.
OnExclude = Callable[[ExcludedHost], None]


def clock(seconds: float) -> str:
    """``00:10``: minutes and seconds since the phase started."""
    whole = int(seconds)
    return f"{whole // 60:02d}:{whole % 60:02d}"


class LiveWatch:
    """Samples every node while the ranks run, alerts on a straggler, writes the verdicts."""

    def __init__(
        self,
        spec: WorkloadSpec,
        config: LiveConfig,
        *,
        daemons: bool,
        observer: RunObserver,
        layout: RunLayout,
        record: ManifestRecorder,
        on_exclude: OnExclude | None = None,
        rule: Rule | None = None,
        hosts: Mapping[str, str] | None = None,
        devices: ReportOf | None = None,
    ) -> None:
        self.spec, self.config, self.daemons = spec, config, daemons
        self.observer, self.layout, self.record = observer, layout, record
        self.on_exclude = on_exclude
        # Daemon node -> the host it runs on, as the run's hostfile names it.
        self.hosts = dict(hosts or {})
        self.rule = rule or Rule()
        # The run's iostat of each host, read for the nodes' data devices per interval.
        self.devices = None if devices is None else LiveDevices(devices)
        self.notes: list[str] = []
        self.sampler: Sampler | None = None
        self.phase: PhaseRun | None = None
        self.alerts: list[Alert] = []
        self.verdicts: list[NodeVerdict] = []
        self.nodes: list[str] = []
        self.readings = 0
        self._samples: IO[str] | None = None
        self._log: IO[str] | None = None
        self._stopping: str | None = None

    def start(self) -> None:
        if self.config.interval_s <= 0:
            return
        self.layout.live_dir.mkdir(exist_ok=True)
        self.layout.logs_dir.mkdir(exist_ok=True)
        self._samples = self.layout.live_samples.open("a")
        self._log = (self.layout.logs_dir / "live.log").open("a")
        self.sampler = Sampler(self.spec, self.config.interval_s, daemons=self.daemons)
        self._write_record()
        self.sampler.start()

    def poll(self) -> None:
        if self.sampler is None:
            return
        for reading in self.sampler.take():
            self._reading(reading)
        if self._stopping is not None:
            raise LaunchError(self._stopping)

    def stop(self) -> None:
        sampler, self.sampler = self.sampler, None
        if sampler is None:
            return
        try:
            sampler.halt()
            for reading in sampler.take():
                self._reading(reading)
            if self.phase is not None:
                self._end_phase()
            if sampler.failure is not None:
                self.notes.append(f"live view ended early: {sampler.failure}")
            elif not self.readings:
                self.notes.append("live view: no phase was sampled")
            self._write_record()
        finally:
            for handle in (self._samples, self._log):
                if handle is not None:
                    handle.close()

    # One reading: the phase it belongs to, its interval judged.
    def _reading(self, reading: Reading) -> None:
        self.readings += 1
        for node, why in reading.errors.items():
            note = f"live view: {node} did not answer: {why}"
            if note not in self.notes:
                self.notes.append(note)
        if self.phase is not None and not self.phase.owns(reading):
            self._end_phase()
        if reading.phase is None:
            return
        if self.phase is None:
            if reading.phase.state == "running":
                self.phase = PhaseRun.begin(reading, self.rule, self.hosts, self.devices)
            return
        events = self.phase.add(self.spec, reading)
        self._write_samples(self.phase)
        for span in events.raised:
            self._raised(self.phase, span)
        for span in events.ended:
            self._ended(self.phase, span)
        if reading.phase.state == "done":
            self._end_phase()

    def _end_phase(self) -> None:
        run, self.phase = self.phase, None
        if run is None or run.ended:
            return
        run.ended = True
        if run.first is run.last:
            return  # a single reading: no interval to judge
        verdicts = phase_verdicts(run, self.spec, [a for a in self.alerts
                                                  if (a.phase, a.repetition)
                                                  == (run.phase, run.repetition)],
                                  self.config.interval_s)  # fmt: skip
        self.verdicts += verdicts
        self.nodes = sorted({*self.nodes, *(v.node for v in verdicts)})
        document = Verdicts(
            interval_s=self.config.interval_s, nodes=self.nodes, verdicts=self.verdicts
        )
        self.layout.verdicts.write_text(document.to_json())

    def _raised(self, run: PhaseRun, span: Span) -> None:
        last = span.judged[-1]
        others = _others(run, span.node, last)
        metric = quoted_metric(last.figures, others)
        value = _median_of(span.judged, metric) or span.value
        typical = _median_of_peers(run, span.node, span.judged, metric) or span.others
        found = where(last.figures, others)
        message = (
            f"{span.node}: {SHORT[metric]} {value:.3g} ms vs {typical:.3g} ms on the others, "
            f"since {clock(span.onset_s)} ({run.phase}, repetition {run.repetition + 1}); "
            f"{found.sentence}"
        )
        alert = Alert(
            node=span.node,
            phase=run.phase,
            repetition=run.repetition,
            metric=METRICS[metric],
            layer=found.layer,
            onset_s=round(span.onset_s, 3),
            # When it was shown: the reading that made it, judged on the run's thread.
            raised_s=round(max(span.raised_s, run.seconds_now()), 3),
            onset_unix_ns=run.since_unix_ns + int(span.onset_s * 1e9),
            value=value,
            others=typical,
            unit="ms",
            action=self.config.straggler,
            message=message,
            evidence=found.evidence,
        )
        self.alerts.append(alert)
        self.observer.alert(message)
        self._log_line(f"straggler: {message}")
        self._write_record()
        action = self.config.straggler
        if action == "stop":
            self._stopping = f"straggler {message} (live.straggler = stop)"
        elif action == "exclude" and self.on_exclude is not None:
            host = last.figures.host or span.node
            self.on_exclude(
                ExcludedHost(
                    name=host,
                    reason=f"live: straggler in {self.layout.root.name}: {message}",
                    evidence={
                        "source": "live",
                        "results_dir": str(self.layout.root),
                        "alert": alert.model_dump(mode="json"),
                    },
                )
            )

    def _ended(self, run: PhaseRun, span: Span) -> None:
        for index, alert in enumerate(self.alerts):
            if (alert.node, alert.phase, alert.repetition, alert.onset_s) == (
                span.node, run.phase, run.repetition, round(span.onset_s, 3)
            ):  # fmt: skip
                ended = span.ended_s
                self.alerts[index] = alert.model_copy(update={"ended_s": ended})
                self._log_line(f"{span.node}: no longer slow since {clock(ended or 0)}")
        self._write_record()

    def _log_line(self, line: str) -> None:
        if self._log is not None:
            stamp = datetime.now(UTC).strftime("%H:%M:%S")
            self._log.write(f"{stamp} {line}\n")
            self._log.flush()

    def _write_samples(self, run: PhaseRun) -> None:
        if self._samples is None:
            return
        for node, history in run.judge.history.items():
            judged = history[-1]
            row = {"phase": run.phase, "repetition": run.repetition, "node": node,
                   "start_s": round(judged.start_s, 3), "end_s": round(judged.end_s, 3),
                   "judged_ms": judged.value, "others_ms": judged.others, "slow": judged.slow,
                   **_figures_row(judged.figures)}  # fmt: skip
            self._samples.write(json.dumps(row) + "\n")
        self._samples.flush()

    def _write_record(self) -> None:
        self.record.live(
            LiveRecord(
                interval_s=self.config.interval_s,
                straggler=self.config.straggler,
                source="daemon stats" if self.daemons else "ranks' progress records",
                rule=LiveRule(**dataclasses.asdict(self.rule)),
                readings=self.readings,
                alerts=list(self.alerts),
            )
        )


def _figures_row(figures: NodeFigures) -> dict[str, Any]:
    keys = ("ops", "in_flight", "server_ms", "queue_ms", "storage_op_ms", "server_p99_ms",
            "storage_p99_ms", "client_ms", "mib_s", "await_ms", "util_pct",
            "device_mb_s")  # fmt: skip
    return {key: getattr(figures, key) for key in keys}


def _others(run: PhaseRun, node: str, judged: Judged) -> list[NodeFigures]:
    found = []
    for name, history in run.judge.history.items():
        if name != node and history and history[-1].start_s == judged.start_s:
            found.append(history[-1].figures)
    return found


def _median_of(judged: Sequence[Judged], metric: str) -> float | None:
    values = [getattr(j.figures, metric) for j in judged]
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _median_of_peers(
    run: PhaseRun, node: str, judged: Sequence[Judged], metric: str
) -> float | None:
    starts = {j.start_s for j in judged}
    values = [getattr(j.figures, metric) for name, history in run.judge.history.items()
              if name != node for j in history if j.start_s in starts]  # fmt: skip
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None
