"""After the preflight's own figures: what the history says about the nodes.

A node flagged in ``history.flagged_runs`` of its last ``history.last_runs``
runs (``benchfs.history.consult``) is left out with those runs as its
evidence (``history.preflight = "exclude"``, the default) or kept and named
(``"flag"``); a node that was flagged and then ran clean is said to have
recovered. Never below the preflight's minimum node count. A history that
cannot be read is named in one line; the run goes on without it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from analysis.manifest import (
    HistoryConsulted,
    HistoryNode,
    HistoryNotConsulted,
    HistoryRecord,
    PreflightRun,
)
from benchfs.config.model import RunConfig
from benchfs.errors import HistoryError
from benchfs.health.policy import minimum_nodes
from benchfs.history.consult import cluster_name, consult
from benchfs.history.record import open_history
from benchfs.results.manifest import ExcludedHost
from benchfs.run.preflight import PreflightOutcome, health_thresholds


def history_step(
    config: RunConfig, given: int, outcome: PreflightOutcome, env: Mapping[str, str]
) -> PreflightOutcome:
    """``outcome`` with the history's exclusions and lines added, and its record
    under ``history`` in the preflight's record."""
    settings = config.history
    if settings.preflight == "off":
        return _with_record(outcome, HistoryNotConsulted(reason='history.preflight = "off"'))
    cluster = cluster_name(settings, env)
    try:
        history = open_history(config.output.results_dir, settings)
        runs = history.node_runs(cluster=cluster)
    except HistoryError as error:
        line = f"history not consulted: {error}"
        unread = HistoryNotConsulted(reason=str(error))
        return dataclasses.replace(_with_record(outcome, unread), lines=[*outcome.lines, line])
    names = [host.name for host in outcome.hosts]
    found = consult(runs, names, settings)
    floor = minimum_nodes(given, health_thresholds(config.preflight))
    kept = list(outcome.hosts)
    excluded = list(outcome.excluded)
    lines = list(outcome.lines)
    nodes: list[HistoryNode] = []
    for suspect in found:
        action = suspect.action
        if action == "exclude" and len(kept) - 1 < floor:
            action = "flag"
            line = (
                f"history: {suspect.node} kept: excluding it would leave fewer than {floor} "
                f"nodes; {suspect.summary.status}: {suspect.summary.reason}"
            )
        else:
            line = dataclasses.replace(suspect, action=action).line()
        if action == "exclude":
            kept = [host for host in kept if host.name != suspect.node]
            excluded.append(
                ExcludedHost(name=suspect.node, reason=suspect.reason, evidence=suspect.evidence)
            )
        lines.append(line)
        nodes.append(
            HistoryNode(
                node=suspect.node,
                decision={"exclude": "excluded", "flag": "kept (flagged)"}.get(action, "kept"),
                status=suspect.summary.status,
                reason=suspect.reason,
                line=line,
                evidence=suspect.evidence,
            )
        )
    consulted = HistoryConsulted(
        database=history.shown,
        cluster=cluster,
        action=settings.preflight,
        rule=(
            f"flagged in {settings.flagged_runs} of its last {settings.last_runs} runs, the "
            f"latest included, within {settings.max_age_h:g} h"
        ),
        nodes=nodes,
    )
    left_out = len(outcome.hosts) - len(kept)
    if left_out:
        lines.append(f"history: {len(kept)} nodes kept, {left_out} excluded on their history")
    record = outcome.record.model_copy(update={"history": consulted})
    if isinstance(record, PreflightRun):
        record = record.model_copy(update={"kept": [host.name for host in kept]})
    return dataclasses.replace(outcome, record=record, hosts=kept, excluded=excluded, lines=lines)


def _with_record(outcome: PreflightOutcome, history: HistoryRecord) -> PreflightOutcome:
    record = outcome.record.model_copy(update={"history": history})
    return dataclasses.replace(outcome, record=record)
