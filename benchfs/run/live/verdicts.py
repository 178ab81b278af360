"""The verdicts of one phase (``analysis.verdicts.NodeVerdict``), every node,
from what the live view saw: its slow spans (the alerts), else the phase as a
whole against the other nodes by the same rule, the metric that holds the
extra time, and the layer ``benchfs.run.live.layer`` names for it."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from analysis.stats.patterns import pattern_of
from analysis.verdicts import Alert, Figures, NodeVerdict
from benchfs.run.live.figures import NodeFigures
from benchfs.run.live.layer import where
from benchfs.run.live.phase import PhaseRun
from benchfs.run.live.rule import Judged
from benchfs.workload.spec import WorkloadSpec

# The figure a verdict quotes, by where the extra time is, and its name.
METRICS = {
    "storage_op_ms": "storage op mean",
    "queue_ms": "queue mean",
    "server_ms": "request time mean",
    "client_ms": "op time mean",
}


def _median(values: Sequence[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.median(known) if known else None


def _value(figures: NodeFigures, metric: str) -> float | None:
    value: float | None = getattr(figures, metric)
    return value


def quoted_metric(node: NodeFigures, others: Sequence[NodeFigures]) -> str:
    """The figure holding ``node``'s extra time: the storage op or the queue when
    it holds half the extra request time or more, else the request time."""
    if node.server_ms is None:
        return "client_ms"
    whole = node.server_ms - (_median([o.server_ms for o in others]) or 0.0)
    for part in ("storage_op_ms", "queue_ms"):
        mine, theirs = _value(node, part), _median([_value(o, part) for o in others])
        if mine is not None and theirs is not None and mine - theirs >= whole / 2:
            return part
    return "server_ms"


def _in_spans(judged: Judged, spans: Sequence[tuple[float, float | None]]) -> bool:
    return any(judged.end_s >= start and (end is None or judged.start_s < end)
               for start, end in spans)  # fmt: skip


def phase_verdicts(
    run: PhaseRun, spec: WorkloadSpec, alerts: Sequence[Alert], interval_s: float
) -> list[NodeVerdict]:
    """Every node of ``run``, slow or ok."""
    whole = run.whole(spec)
    found = []
    for node, mine in sorted(whole.items()):
        others = [figures for name, figures in whole.items() if name != node]
        history = run.judge.history.get(node, [])
        spans = [(span.onset_s, span.ended_s) for span in run.judge.spans.get(node, [])]
        value = mine.judged_ms()
        typical = _median([o.judged_ms() for o in others])
        if not spans:
            spans = run.judge.phase_spans(node, value, typical)
        first_s = history[0].start_s if history else 0.0
        said = pattern_of(spans, first_s, interval_s)
        metric = quoted_metric(mine, others) if spans else (
            "storage_op_ms" if mine.storage_op_ms is not None else "client_ms"
            if mine.server_ms is None else "server_ms"
        )  # fmt: skip
        inside = [j for j in history if _in_spans(j, spans)] if spans else history
        p50 = _median([_value(j.figures, metric) for j in inside]) or _value(mine, metric)
        theirs = _median([
            _median([_value(o, metric) for _, o in _peers(run, node, j)])
            for j in inside
        ]) or _median([_value(o, metric) for o in others])  # fmt: skip
        p99 = mine.storage_p99_ms if metric == "storage_op_ms" else mine.server_p99_ms
        others_p99 = _median([o.storage_p99_ms if metric == "storage_op_ms" else o.server_p99_ms
                              for o in others])  # fmt: skip
        mine_alerts = [alert for alert in alerts if alert.node == node]
        status = "slow" if spans else "ok"
        layer = None
        if spans:
            # The layers over the longest slow span, not diluted by the healthy seconds.
            onset, end = max(spans, key=lambda span: (span[1] or run.seconds(run.last)) - span[0])
            during = run.span(spec, onset, end)
            if node in during:
                layer = where(during[node], [f for name, f in during.items() if name != node])
            else:
                layer = where(mine, others)
        name = METRICS[metric]
        if spans and layer is not None:
            shown = f"{p50:.3g} ms" if p50 is not None else "?"
            against = f" vs {theirs:.3g} ms on the other nodes" if theirs is not None else ""
            sentence = f"{node}: {run.phase} {name} {shown}{against}, {said.words()}; "
            sentence += layer.sentence
        else:
            sentence = f"{node}: {run.phase} ok"
        found.append(
            NodeVerdict(
                node=node,
                host=mine.host,
                phase=run.phase,
                repetition=run.repetition,
                metric=name,
                op=run.phase if run.phase in ("read", "write") else None,
                status=status,
                layer=None if layer is None else layer.layer,
                pattern=said.pattern,
                onset_s=said.onset_s,
                intervals=said.intervals,
                figures=Figures(
                    unit="ms", p50=p50, p99=p99, others_p50=theirs, others_p99=others_p99
                ),
                layers=[] if layer is None else layer.layers,
                evidence=[] if layer is None else layer.evidence,
                alerts=mine_alerts,
                source="live",
                verdict=sentence,
            )
        )
    return found


def _peers(run: PhaseRun, node: str, judged: Judged) -> list[tuple[str, NodeFigures]]:
    """The other nodes' figures over the same interval as ``judged``."""
    found = []
    for name, history in run.judge.history.items():
        if name == node:
            continue
        for other in history:
            if other.start_s == judged.start_s:
                found.append((name, other.figures))
                break
    return found
