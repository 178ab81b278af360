"""The rows of the results database, as plain values (docs/HISTORY.md).

A ``RunRecord`` is what one run, diagnose or bench side adds: the run, one
``NodeRow`` per node it saw (or left out), every ``VerdictRow`` found
against a node with the figures behind it, and the run's per-repetition
``FigureRow``s that trends are made of. ``benchfs.history.rows`` makes them
from a results directory; ``benchfs.history.store`` writes and reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["run", "diagnose", "bench cluster"]
# used: the node ran the workload; excluded: left out before it; measured: diagnose.
Role = Literal["used", "excluded", "measured"]
# Who found a verdict: the preflight's fio, iostat during the workload, the engine's
# own storage ops, diagnose, or the live per-node model.
Source = Literal["preflight", "iostat", "engine", "diagnose", "live", "history"]


@dataclass(frozen=True)
class RunRow:
    uid: str  # the same run always gets the same uid: importing twice changes nothing
    kind: Kind
    cluster: str
    label: str
    results_dir: str
    command: str
    started_at: str  # ISO 8601, UTC, seconds
    ended_at: str | None
    status: str  # the manifest's: completed, failed, interrupted, aborted, running
    error: str | None
    # Runs with the same key ran the same workload (target, pattern, sizes, nodes).
    workload_key: str
    node_count: int
    benchfs_version: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class VerdictRow:
    """One finding against one node in one run, with the figures behind it."""

    node: str
    source: Source
    flagged: bool
    metric: str  # what was slow: "read storage op mean", "r_await", "read_bw_MiB_s"
    layer: str  # where the time went: "device", "above the device", ...
    reason: str  # one line, as a storage admin would say it
    pattern: str = ""  # whole run, onset, passing, intermittent, recovered
    onset_s: float | None = None
    value: float | None = None
    typical: float | None = None  # the same metric on the other nodes
    unit: str = ""
    p50_ms: float | None = None
    p99_ms: float | None = None
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeRow:
    """One node in one run: its part in it, its figures, and its worst verdict."""

    node: str
    role: Role
    flagged: bool
    excluded_by: Literal["preflight", "history"] | None = None
    # The worst verdict's fields (empty when not flagged).
    metric: str = ""
    layer: str = ""
    pattern: str = ""
    onset_s: float | None = None
    value: float | None = None
    typical: float | None = None
    unit: str = ""
    reason: str = ""
    # The engine's storage ops on this node (None where the run has no traces).
    ops: int | None = None
    mean_ms: float | None = None
    p50_ms: float | None = None
    p99_ms: float | None = None
    slow_pct: float | None = None
    read_mean_ms: float | None = None
    write_mean_ms: float | None = None
    # The preflight's decision and measurements (fio with the workload's pattern).
    preflight_decision: str = ""
    preflight_read_MiB_s: float | None = None
    preflight_write_MiB_s: float | None = None
    figures: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FigureRow:
    """One repetition's figure of one phase (bwMiB of the write phase, ...)."""

    phase: str
    metric: str
    repetition: int
    value: float


@dataclass(frozen=True)
class RunRecord:
    run: RunRow
    nodes: list[NodeRow] = field(default_factory=list)
    verdicts: list[VerdictRow] = field(default_factory=list)
    figures: list[FigureRow] = field(default_factory=list)


@dataclass(frozen=True)
class NodeRun:
    """A node's row joined with its run's time and identity: what the node
    statuses and ``benchfs nodes --node`` read."""

    run_id: int
    uid: str
    cluster: str
    label: str
    kind: str
    started_at: str
    status: str
    results_dir: str
    row: NodeRow

    @property
    def judged(self) -> bool:
        """Whether this run said anything about the node: it flagged it, measured it,
        or ran to its end with it. A node left out on its history was not seen, nor
        one in a run that ended (failed, interrupted, aborted) before a figure of it:
        clean there is not evidence of recovery."""
        row = self.row
        if row.excluded_by == "history" or self.status == "running":
            return False
        measured = row.ops is not None or row.preflight_decision != ""
        return row.flagged or measured or self.status == "completed"
