"""What a node's runs say about it: a status and a one-line reason.

From the runs that judged the node (flagged it, measured it or ran to its
end with it; a run that left it out on its history did not see it, nor one
that ended before any figure of it), oldest first:

- ``healthy``: never flagged;
- ``new``: flagged in its latest run, and not before (or not often enough);
- ``confirmed``: flagged in at least ``flagged_runs`` of its last
  ``last_runs`` runs, its latest included, with no clean run between;
- ``intermittent``: flagged in its latest run, clean in a run between that
  flag and an earlier one;
- ``recovered``: flagged before, clean in its latest run.

``Rules.acts_on`` is the preflight's test: flagged in ``flagged_runs`` of the
last ``last_runs`` runs, the latest included (confirmed, or intermittent that
often), counting only runs within ``max_age_h``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from analysis.figures import figure
from benchfs.history.model import NodeRow, NodeRun

Status = Literal["healthy", "new", "confirmed", "intermittent", "recovered"]
# Statuses the preflight, --drain-hint and --exit-code act on (given enough flags).
ACTED_ON: tuple[Status, ...] = ("confirmed", "intermittent")


@dataclass(frozen=True)
class Rules:
    flagged_runs: int = 2
    last_runs: int = 3

    def describe(self) -> str:
        return f"flagged in {self.flagged_runs} of its last {self.last_runs} runs"


@dataclass(frozen=True)
class NodeSummary:
    node: str
    cluster: str
    status: Status
    reason: str
    runs_seen: int
    runs_flagged: int
    runs_left_out: int  # left out on its history
    first_flagged: str | None
    last_flagged: str | None
    last_seen: str | None
    # Flags of the last ``last_runs`` judged runs, oldest first.
    recent: tuple[bool, ...]
    # The worst flagged run's verdict and figures.
    worst: NodeRun | None = None
    rules: Rules = field(default_factory=Rules)

    @property
    def recent_flagged(self) -> int:
        return sum(self.recent)

    @property
    def acted_on(self) -> bool:
        """Flagged in k of its last m runs, the latest included."""
        return (
            bool(self.recent) and self.recent[-1] and self.recent_flagged >= self.rules.flagged_runs
        )

    def worst_text(self) -> str:
        """``read storage op mean 45.2 ms (1.1 ms on the others)``, or ``-``."""
        if self.worst is None:
            return "-"
        return describe_figure(self.worst.row)

    def to_json(self) -> dict[str, Any]:
        worst = self.worst
        return {
            "node": self.node,
            "cluster": self.cluster,
            "status": self.status,
            "reason": self.reason,
            "runs_seen": self.runs_seen,
            "runs_flagged": self.runs_flagged,
            "runs_left_out": self.runs_left_out,
            "first_flagged": self.first_flagged,
            "last_flagged": self.last_flagged,
            "last_seen": self.last_seen,
            "recent_flags": list(self.recent),
            "acted_on": self.acted_on,
            "rules": {"flagged_runs": self.rules.flagged_runs, "last_runs": self.rules.last_runs},
            "worst": None
            if worst is None
            else {
                "run": worst.label,
                "started_at": worst.started_at,
                "results_dir": worst.results_dir,
                "metric": worst.row.metric,
                "layer": worst.row.layer,
                "pattern": worst.row.pattern,
                "onset_s": worst.row.onset_s,
                "value": worst.row.value,
                "typical": worst.row.typical,
                "unit": worst.row.unit,
                "p50_ms": worst.row.p50_ms,
                "p99_ms": worst.row.p99_ms,
                "slow_pct": worst.row.slow_pct,
                "reason": worst.row.reason,
            },
        }


def describe_figure(row: NodeRow) -> str:
    if not row.metric:
        return "-"
    value = f"{figure(row.value)} {row.unit}".strip() if row.value is not None else "?"
    typical = (
        f" ({figure(row.typical)} {row.unit} on the others)".replace("  ", " ")
        if row.typical is not None
        else ""
    )
    return f"{row.metric} {value}{typical}"


def summarize(runs: Iterable[NodeRun], rules: Rules | None = None) -> list[NodeSummary]:
    """One summary per (cluster, node), worst status first, then by name."""
    rules = rules or Rules()
    by_node: dict[tuple[str, str], list[NodeRun]] = {}
    for run in runs:
        by_node.setdefault((run.cluster, run.row.node), []).append(run)
    summaries = [summarize_node(node_runs, rules) for node_runs in by_node.values()]
    order = {"confirmed": 0, "intermittent": 1, "new": 2, "recovered": 3, "healthy": 4}
    return sorted(summaries, key=lambda s: (order[s.status], s.cluster, s.node))


def summarize_node(runs: Sequence[NodeRun], rules: Rules) -> NodeSummary:
    """The status of one node from its runs, oldest first."""
    judged = [run for run in runs if run.judged]
    flags = [run.row.flagged for run in judged]
    flagged = [run for run in judged if run.row.flagged]
    recent = tuple(flags[-rules.last_runs :])
    status, reason = _status(judged, flags, recent, rules)
    return NodeSummary(
        node=runs[0].row.node,
        cluster=runs[0].cluster,
        status=status,
        reason=reason,
        runs_seen=len(judged),
        runs_flagged=len(flagged),
        runs_left_out=len(runs) - len(judged),
        first_flagged=flagged[0].started_at if flagged else None,
        last_flagged=flagged[-1].started_at if flagged else None,
        last_seen=judged[-1].started_at if judged else None,
        recent=recent,
        worst=max(flagged, key=_severity) if flagged else None,
        rules=rules,
    )


def within(runs: Iterable[NodeRun], max_age_h: float, now: datetime | None = None) -> list[NodeRun]:
    """The runs that started less than ``max_age_h`` hours ago."""
    moment = now or datetime.now(UTC)
    oldest = (moment - timedelta(hours=max_age_h)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return [run for run in runs if run.started_at >= oldest]


def short_time(stamp: str | None) -> str:
    """``2026-12-01T23:10:04Z`` as ``12-01 23:10`` (UTC), ``-`` for none."""
    if not stamp:
        return "-"
    return f"{stamp[5:10]} {stamp[11:16]}"


def _status(
    judged: Sequence[NodeRun], flags: Sequence[bool], recent: Sequence[bool], rules: Rules
) -> tuple[Status, str]:
    if not judged:
        return "healthy", "not seen in any run: only left out on its history"
    if not any(flags):
        return "healthy", f"never flagged in {_runs(len(judged))}"
    last_flag = max(index for index, flag in enumerate(flags) if flag)
    latest = judged[-1]
    worst = _why(latest.row) if latest.row.flagged else ""
    if not flags[-1]:
        clean = len(flags) - 1 - last_flag
        return "recovered", (
            f"clean in its last {_runs(clean)} since {short_time(judged[last_flag + 1].started_at)}"
            f", flagged {short_time(judged[last_flag].started_at)}: {_why(judged[last_flag].row)}"
        )
    count = sum(recent)
    flagged_at = [index for index, flag in enumerate(flags) if flag]
    if count >= rules.flagged_runs:
        first = len(flags) - len(recent) + recent.index(True)
        gap = not all(flags[first:])
        status: Status = "intermittent" if gap else "confirmed"
        return status, f"flagged in {count} of its last {_runs(len(recent))}: {worst}"
    if len(flagged_at) > 1:
        return "intermittent", (
            f"flagged again after clean runs (first {short_time(judged[flagged_at[0]].started_at)}"
            f"): {worst}"
        )
    return "new", f"flagged in its latest run, never before: {worst}"


def _why(row: NodeRow) -> str:
    where = f" ({row.layer})" if row.layer else ""
    pattern = f", {row.pattern}" if row.pattern else ""
    return f"{describe_figure(row)}{where}{pattern}"


def _runs(count: int) -> str:
    return f"{count} run" if count == 1 else f"{count} runs"


def _severity(run: NodeRun) -> float:
    """How far the flagged figure is from the others' (bandwidth: lower is worse)."""
    row = run.row
    if row.value is None:
        return 0.0
    if row.typical is None or row.typical <= 0 or row.value <= 0:
        return 1.0
    factor = row.typical / row.value if row.unit == "MiB/s" else row.value / row.typical
    return max(factor, 1.0)
