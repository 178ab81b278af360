"""The live straggler rule: which node is far from the others, since when.

Per interval, a node is slow when its time per request (``NodeFigures.
judged_ms``) is at least ``factor`` times the median of the other nodes'
*and* at least ``min_extra_ms`` above it; a node with requests in its daemon
and none answered counts as the whole interval. ``intervals`` slow intervals
in a row raise an alert whose onset is the first of them; as many healthy
ones in a row end it. The onset is the end of the first slow interval: the
first reading that shows the node slow (the slowdown began within the
interval before it, never after the onset); ``ended_s`` is the end of the
last slow one. An interval in
which fewer than ``min_peers`` other nodes did any work judges nobody (the
end of a phase, when the fast nodes are through): it neither counts nor
breaks a run.

Why these numbers: on a healthy node loaded by other work (two cores, a
compile beside the run, the page cache flushing) one node's time per request
swings by 2x between seconds, and a lone slow second of 10-50 ms happens on
every node (writeback, a scheduler stall); what none of them does is stay at
4x the others' median for three seconds in a row, since such load hits every
node on the machine alike and moves the median with it. The ratio alone
would flag a 0.1 ms node against 0.02 ms ones, so the extra must also be
5 ms, more than a healthy loaded request here takes in all (1-2 ms); a
throttled or failing disk is 10x-1000x slower and passes both at once.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field

from benchfs.run.live.figures import NodeFigures


@dataclass(frozen=True)
class Rule:
    factor: float = 4.0
    min_extra_ms: float = 5.0
    intervals: int = 3
    min_peers: int = 2

    def slow(self, value: float, others: float) -> bool:
        return value >= self.factor * others and value - others >= self.min_extra_ms


@dataclass(frozen=True)
class Judged:
    """One node in one interval: its figure against the others' median."""

    start_s: float
    end_s: float
    value: float | None
    others: float | None
    slow: bool | None  # None: not judged (no figure, or too few peers)
    figures: NodeFigures


@dataclass
class Span:
    """A node's alert while it lasts: slow from ``onset_s``, raised at ``raised_s``."""

    node: str
    onset_s: float
    raised_s: float
    value: float
    others: float
    ended_s: float | None = None
    # The judged intervals of the run of slow ones that raised it.
    judged: list[Judged] = field(default_factory=list)


@dataclass
class _Track:
    run: list[Judged] = field(default_factory=list)  # slow intervals in a row
    healthy: list[Judged] = field(default_factory=list)  # healthy in a row, while open
    open: Span | None = None


@dataclass
class Events:
    raised: list[Span] = field(default_factory=list)
    ended: list[Span] = field(default_factory=list)


class PhaseJudge:
    """The rule over one phase's intervals, node by node, in time order."""

    def __init__(self, rule: Rule | None = None) -> None:
        self.rule = rule or Rule()
        self.history: dict[str, list[Judged]] = {}
        self.spans: dict[str, list[Span]] = {}
        self._tracks: dict[str, _Track] = {}

    def interval(self, start_s: float, end_s: float, nodes: Mapping[str, NodeFigures]) -> Events:
        """Judge every node over ``[start_s, end_s]``; the alerts raised and ended."""
        events = Events()
        values = {name: figures.judged_ms() for name, figures in nodes.items()}
        for name, figures in nodes.items():
            value = values[name]
            peers = [v for other, v in values.items() if other != name and v is not None]
            others = statistics.median(peers) if len(peers) >= self.rule.min_peers else None
            slow = None if value is None or others is None else self.rule.slow(value, others)
            judged = Judged(start_s, end_s, value, others, slow, figures)
            self.history.setdefault(name, []).append(judged)
            self._step(name, judged, events)
        return events

    def _step(self, name: str, judged: Judged, events: Events) -> None:
        track = self._tracks.setdefault(name, _Track())
        if judged.slow is None:
            return
        need = self.rule.intervals
        if judged.slow:
            track.healthy = []
            track.run.append(judged)
            if track.open is None and len(track.run) >= need:
                first = track.run[0]
                values = [j.value for j in track.run if j.value is not None]
                others = [j.others for j in track.run if j.others is not None]
                span = Span(
                    name, first.end_s, judged.end_s, statistics.median(values),
                    statistics.median(others), judged=list(track.run),
                )  # fmt: skip
                track.open = span
                self.spans.setdefault(name, []).append(span)
                events.raised.append(span)
            return
        track.run = []
        if track.open is not None:
            track.healthy.append(judged)
            if len(track.healthy) >= need:
                track.open.ended_s = track.healthy[0].start_s
                events.ended.append(track.open)
                track.open, track.healthy = None, []

    def phase_spans(
        self, name: str, value: float | None, typical: float | None
    ) -> list[tuple[float, float | None]]:
        """For a node that raised no alert (the phase too short for ``intervals``
        slow ones in a row): its slow span when the phase as a whole (``value``
        against the others' ``typical``) is slow by the rule and so were most of
        its judged intervals, from the first slow one (to the end when the last
        judged one was slow); none when only a minority were, as one stalled
        request can make a lone second's mean, and the phase's, far from the
        others' (the lone slow second the rule ignores)."""
        if value is None or typical is None or not self.rule.slow(value, typical):
            return []
        judged = [j for j in self.history.get(name, []) if j.slow is not None]
        slow = [j for j in judged if j.slow]
        if not judged:  # the phase ended before an interval could be judged
            return [(0.0, None)]
        if 2 * len(slow) <= len(judged):
            return []
        return [(slow[0].end_s, None if judged[-1].slow else slow[-1].end_s)]

    def open_spans(self) -> list[Span]:
        return [track.open for track in self._tracks.values() if track.open is not None]
