"""What the history says about the nodes of a run that is about to start.

A node flagged in ``flagged_runs`` of its last ``last_runs`` runs (its
latest included, only runs of the last ``max_age_h`` hours counted) is a
suspect: the preflight excludes it (``history.preflight = "exclude"``) or
keeps it and says so (``"flag"``), with its runs as the evidence. A node
flagged in that window but clean in its latest run is said to have
recovered, and kept.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from benchfs.config.model import HistoryConfig
from benchfs.history.model import NodeRun
from benchfs.history.status import NodeSummary, Rules, summarize, within

# How many of a suspect's runs its evidence lists (newest first).
EVIDENCE_RUNS = 5

Action = Literal["exclude", "flag", "recovered"]


@dataclass(frozen=True)
class NodeHistory:
    """One node the history has something to say about, and what to do."""

    node: str
    action: Action
    summary: NodeSummary
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def reason(self) -> str:
        return f"history: {self.summary.status}: {self.summary.reason}"

    def line(self) -> str:
        done = {"exclude": "excluded", "flag": "kept (flagged)", "recovered": "kept"}[self.action]
        return f"history: {self.node} {done}: {self.summary.status}: {self.summary.reason}"


def cluster_name(config: HistoryConfig, env: Mapping[str, str] | None = None) -> str:
    """The cluster this run's nodes are kept under (``benchfs.history.rows.cluster_of``
    reads the same from a manifest)."""
    env = os.environ if env is None else env
    return config.cluster or env.get("SLURM_CLUSTER_NAME") or socket.gethostname()


def consult(
    runs: Sequence[NodeRun],
    nodes: Sequence[str],
    config: HistoryConfig,
    *,
    now: datetime | None = None,
) -> list[NodeHistory]:
    """The suspects and the recovered among ``nodes``, in the order given."""
    rules = Rules(config.flagged_runs, config.last_runs)
    recent = within(runs, config.max_age_h, now)
    summaries = {summary.node: summary for summary in summarize(recent, rules)}
    found = []
    for node in nodes:
        summary = summaries.get(node)
        if summary is None or summary.status == "healthy":
            continue
        if summary.acted_on:
            action: Action = "exclude" if config.preflight == "exclude" else "flag"
        elif summary.status == "recovered":
            action = "recovered"
        else:
            continue  # new: one run is not yet evidence
        mine = [run for run in recent if run.row.node == node and run.judged]
        found.append(NodeHistory(node, action, summary, _evidence(summary, mine, config)))
    return found


def _evidence(
    summary: NodeSummary, runs: Sequence[NodeRun], config: HistoryConfig
) -> dict[str, Any]:
    return {
        "source": "history",
        "status": summary.status,
        "rule": (
            f"flagged in {config.flagged_runs} of its last {config.last_runs} runs, the latest "
            f"included, within {config.max_age_h:g} h"
        ),
        "recent_flags": list(summary.recent),
        "runs": [
            {
                "started_at": run.started_at,
                "label": run.label,
                "results_dir": run.results_dir,
                "flagged": run.row.flagged,
                "metric": run.row.metric,
                "layer": run.row.layer,
                "value": run.row.value,
                "typical": run.row.typical,
                "unit": run.row.unit,
                "reason": run.row.reason,
            }
            for run in reversed(runs[-EVIDENCE_RUNS:])
        ],
    }
