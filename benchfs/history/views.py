"""What ``benchfs nodes`` and ``benchfs history`` show, as plain rows and lines
(the CLI lays them out): the node table, one node's runs, drain hints, trends,
and the ``--since`` times they take.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from analysis.figures import figure
from analysis.stats import noise
from benchfs.errors import ConfigError
from benchfs.history.model import NodeRow, NodeRun
from benchfs.history.status import ACTED_ON, NodeSummary, describe_figure, short_time
from benchfs.history.trends import Trend

# The verdict behind a figure (the reason lines say it too): shown with --wide.
VERDICT_HEADERS = ("metric", "layer", "pattern")
NODE_HEADERS = ("node", "status", "runs", "flagged", "first flagged", "last flagged", "worst")
RUN_HEADERS = ("started", "run", "part", "flagged", "mean ms", "p99 ms", "slow %", "worst")
# Verdicts of a trend as a table cell (the JSON keeps noise's own words).
SHORT_VERDICTS = {noise.NO_ESTIMATE_ONE: "no estimate", noise.NOT_POSITIVE: "not tested"}
TREND_HEADERS = ("started", "phase", "mean", "± sd", "change", "verdict", "flagged")
# Shown with --wide: which run, and how many repetitions its noise comes from.
TREND_WIDE = ("run", "reps")
# A drain reason is one field of scontrol's command line: short, no quotes.
DRAIN_REASON_CHARS = 120
_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def since_stamp(text: str, now: datetime | None = None) -> str:
    """``--since``: a date or time (ISO, UTC unless it says otherwise) or an age
    (``90m``, ``24h``, ``7d``, ``2w``), as the history's UTC time text."""
    value = text.strip()
    relative = _RELATIVE.match(value)
    if relative:
        moment = (now or datetime.now(UTC)) - timedelta(
            **{_UNITS[relative.group(2)]: float(relative.group(1))}
        )
    else:
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(
                f"--since {text}: expected a date or time (2026-12-01, 2026-12-01T23:00) "
                "or an age (90m, 24h, 7d, 2w)"
            ) from None
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def node_rows(summaries: Sequence[NodeSummary], *, with_cluster: bool) -> list[list[str]]:
    rows = []
    for summary in summaries:
        worst = summary.worst.row if summary.worst is not None else None
        value = _value(worst) if worst is not None else "-"
        name = f"{summary.cluster}/{summary.node}" if with_cluster else summary.node
        rows.append(
            [
                name,
                summary.status,
                str(summary.runs_seen),
                str(summary.runs_flagged),
                short_time(summary.first_flagged),
                short_time(summary.last_flagged),
                value,
                *_verdict(worst),
            ]
        )
    return rows


def reason_lines(summaries: Sequence[NodeSummary], *, with_cluster: bool) -> list[str]:
    """One line per node that is not healthy: its status and why."""
    return [
        f"{f'{s.cluster}/' if with_cluster else ''}{s.node}: {s.status}: {s.reason}"
        for s in summaries
        if s.status != "healthy"
    ]


def run_rows(runs: Sequence[NodeRun]) -> list[list[str]]:
    """One node's runs, one line each, oldest first."""
    rows = []
    for run in runs:
        row = run.row
        part = row.role if row.excluded_by is None else f"out ({row.excluded_by})"
        if run.status != "completed":
            part += f", run {run.status}"
        rows.append(
            [
                short_time(run.started_at),
                run.label,
                part,
                "yes" if row.flagged else "no",
                figure(row.mean_ms),
                figure(row.p99_ms),
                figure(row.slow_pct),
                _value(row),
                *_verdict(row),
            ]
        )
    return rows


def run_reason_lines(runs: Sequence[NodeRun]) -> list[str]:
    """What each flagged run found, and why a run left the node out."""
    return [
        f"{short_time(run.started_at)} {run.label}: {run.row.reason}"
        for run in runs
        if run.row.reason and (run.row.flagged or run.row.excluded_by is not None)
    ]


def _verdict(row: NodeRow | None) -> list[str]:
    """Metric, layer and time pattern of a flagged row, ``-`` where none."""
    if row is None or not row.flagged:
        return ["-"] * len(VERDICT_HEADERS)
    return [row.metric or "-", row.layer or "-", row.pattern or "-"]


def _value(row: NodeRow) -> str:
    if not row.flagged or row.value is None:
        return "-"
    return f"{figure(row.value)} {row.unit}".strip()


def drain_hints(summaries: Sequence[NodeSummary]) -> list[str]:
    """``scontrol update`` lines that would drain the nodes the preflight acts on
    (printed for an admin; never run)."""
    lines = []
    for summary in summaries:
        if summary.status not in ACTED_ON or not summary.acted_on:
            continue
        worst = summary.worst.row if summary.worst is not None else None
        what = describe_figure(worst) if worst is not None else summary.status
        reason = (
            f"benchfs: {summary.status}, flagged {summary.recent_flagged} of last "
            f"{len(summary.recent)} runs since {short_time(summary.first_flagged)}: {what}"
        )
        reason = reason.replace('"', "'")[:DRAIN_REASON_CHARS]
        lines.append(
            f'scontrol update nodename={shlex.quote(summary.node)} state=drain reason="{reason}"'
        )
    return lines


def trend_rows(trend: Trend) -> list[list[str]]:
    rows = []
    for point in trend.points:
        change = f"{point.change_pct:+.1f}%" if point.change_pct is not None else "-"
        verdict = SHORT_VERDICTS.get(point.verdict, point.verdict)
        verdict = f"{verdict}, {point.direction}" if point.direction else verdict
        rows.append(
            [
                short_time(point.started_at),
                point.phase,
                figure(point.mean),
                figure(point.spread) if point.spread is not None else "-",
                change,
                verdict,
                ", ".join(point.flagged_nodes) or "-",
                point.label,
                str(len(point.values)),
            ]
        )
    return rows
