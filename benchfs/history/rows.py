"""A results directory as rows of the history: ``run_record`` is the one place
that knows where a run's per-node verdicts come from.

A run with live diagnosis writes them in ``verdicts.json`` (``analysis.verdicts``):
every node judged in every phase, slow ones with their layer, time pattern,
onset and figures against the other nodes; those are the run's verdicts of
the workload. Beside them, and for the results directories written before:
- the preflight's decisions in the manifest (fio with the workload's
  pattern on every node, and the policy's evidence);
- the exclusions (by the preflight's figures, or by the history itself);
- the stragglers the manifest records (iostat's awaits during the workload);
- the engine's storage ops per node (its traces, ``analysis.loaders.run``),
  checked against iostat on the same node (``analysis.stats.crosscheck``): the
  figures of every node, and a verdict where ``verdicts.json`` is absent.
"""

from __future__ import annotations

import hashlib
import math
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.compare import REPETITION_METRICS
from analysis.errors import AnalysisError
from analysis.loaders.run import RunData, load_run
from analysis.stats.overview import Part, trace_stats
from analysis.verdicts import Verdicts
from benchfs.config.sizes import format_size
from benchfs.history.model import FigureRow, Kind, NodeRow, RunRecord, RunRow, VerdictRow
from benchfs.results.manifest import load_manifest

# Which verdict speaks for a node when several sources flag it: the most direct first.
SOURCE_ORDER = ("live", "engine", "iostat", "preflight", "history", "diagnose")
PREFLIGHT_LAYER = "storage (fio before the run)"
HISTORY_SOURCE = "history"
STORAGE_PART: tuple[Part, ...] = ("storage",)


def run_record(run_dir: Path) -> RunRecord:
    """The run, its nodes, their verdicts and its figures, from ``run_dir``."""
    manifest = _manifest(run_dir)
    run = load_run_or_none(run_dir)
    config = manifest.get("effective_config") or {}
    hosts = manifest.get("hosts") or {}
    used = [str(host["name"]) for host in hosts.get("used") or []]
    excluded = {str(host["name"]): host for host in hosts.get("excluded") or []}
    verdicts = [
        *_preflight_verdicts(manifest.get("preflight") or {}),
        *_history_verdicts(excluded),
        *_straggler_verdicts(manifest.get("stragglers") or {}, used),
    ]
    engine: dict[str, dict[str, Any]] = {}
    if run is not None and run.traces is not None:
        engine, found = _engine_figures(run, used)
        if run.verdicts is None:
            verdicts += found
    if run is not None and run.verdicts is not None:
        verdicts += _live_verdicts(run.verdicts)
    preflight = _preflight_figures(manifest.get("preflight") or {})
    names = list(dict.fromkeys([*used, *excluded, *preflight]))
    nodes = [
        _node_row(name, used, excluded, verdicts, engine.get(name, {}), preflight.get(name, {}))
        for name in names
    ]
    return RunRecord(
        run=_run_row(run_dir, manifest, config, node_count=len(used)),
        nodes=nodes,
        verdicts=verdicts,
        figures=_figures(run) if run is not None else [],
    )


def load_run_or_none(run_dir: Path) -> RunData | None:
    """The run's data, or None where it has no summary (it failed before one)."""
    try:
        return load_run(run_dir, allow_partial=True)
    except AnalysisError:
        return None


def cluster_of(manifest: Mapping[str, Any]) -> str:
    """The cluster a run's nodes belong to: ``history.cluster``, else the Slurm
    cluster it ran in, else the host it was started from."""
    config = manifest.get("effective_config") or {}
    named = (config.get("history") or {}).get("cluster")
    environment = manifest.get("environment") or {}
    return str(
        named
        or environment.get("SLURM_CLUSTER_NAME")
        or manifest.get("launched_from")
        or socket.gethostname()
    )


def workload_key(config: Mapping[str, Any], node_count: int) -> str:
    """What makes two runs comparable: target, pattern, sizes and node count."""
    workload = config.get("workload") or {}
    if not workload:
        return f"nodes={node_count}"
    parts = [
        f"target={workload.get('target')}",
        f"interface={workload.get('interface', 'native')}",
        f"tool={workload.get('tool', 'builtin')}",
        f"api={workload.get('api')}",
        f"transfer={_size(workload.get('transfer_size'))}",
        f"block={_size(workload.get('block_size'))}",
        f"segments={workload.get('segments')}",
        f"queue_depth={workload.get('queue_depth', 1)}",
        f"nodes={node_count}",
        f"tasks_per_node={workload.get('tasks_per_node')}",
    ]
    suite = (config.get("suite") or {}).get("name", "none")
    metadata = (config.get("metadata") or {}).get("mode", "off")
    if suite != "none":
        parts.append(f"suite={suite}")
    if metadata != "off":
        parts.append(f"metadata={metadata}")
    return " ".join(parts)


def run_uid(*parts: object) -> str:
    """A stable identity from what names a run (the same inputs, the same uid)."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:32]


def unit_of(metric: str) -> str:
    """The unit a metric's name ends with: ``read_bw_MiB_s`` -> ``MiB/s``."""
    for suffix, unit in (("_MiB_s", "MiB/s"), ("_ms", "ms"), ("_ns", "ns"), ("_ops_s", "ops/s"),
                         ("_iops", "IOPS"), ("_pct", "%")):  # fmt: skip
        if metric.endswith(suffix):
            return unit
    return ""


def _manifest(run_dir: Path) -> dict[str, Any]:
    """The manifest as JSON data (``load_manifest``: one line naming what is wrong)."""
    return load_manifest(run_dir).model_dump(mode="json")


def _kind(command: Sequence[str]) -> Kind:
    return "bench cluster" if list(command[1:3]) == ["bench", "cluster"] else "run"


def _run_row(
    run_dir: Path, manifest: Mapping[str, Any], config: Mapping[str, Any], node_count: int
) -> RunRow:
    command = [str(part) for part in manifest.get("command_line") or []]
    started = _utc(str(manifest["start_time"]))
    launched_from = str(manifest.get("launched_from", ""))
    sweep = manifest.get("sweep") or None
    return RunRow(
        uid=run_uid("run", launched_from, started, run_dir.resolve().name),
        kind=_kind(command),
        cluster=cluster_of(manifest),
        label=str(manifest.get("label", run_dir.name)),
        results_dir=str(run_dir.resolve()),
        command=" ".join(command),
        started_at=started,
        ended_at=_utc(manifest["end_time"]) if manifest.get("end_time") else None,
        status=str(manifest.get("status", "running")),
        error=manifest.get("error"),
        workload_key=workload_key(config, node_count),
        node_count=node_count,
        benchfs_version=str((manifest.get("package") or {}).get("version", "")),
        details={"sweep": sweep, "notes": manifest.get("notes") or []},
    )


def _utc(stamp: str) -> str:
    """An ISO time as UTC to the second: ``2026-12-01T23:10:04Z``."""
    moment = pd.Timestamp(stamp)
    moment = moment.tz_localize("UTC") if moment.tzinfo is None else moment.tz_convert("UTC")
    return str(moment.strftime("%Y-%m-%dT%H:%M:%SZ"))


def _preflight_verdicts(preflight: Mapping[str, Any]) -> list[VerdictRow]:
    found = []
    for decision in preflight.get("decisions") or []:
        if decision.get("decision") == "kept":
            continue
        evidence = decision.get("evidence") or {}
        items = sorted(evidence.get("items") or [], key=lambda item: -float(item["robust_z"]))
        worst = items[0] if items else {}
        metric = str(worst.get("metric", "preflight error" if evidence.get("error") else ""))
        found.append(
            VerdictRow(
                node=str(decision["node"]),
                source="preflight",
                flagged=True,
                metric=metric,
                layer=PREFLIGHT_LAYER,
                reason=f"preflight: {decision.get('reason', '')}",
                value=finite_number(worst.get("value")),
                typical=finite_number(worst.get("median")),
                unit=unit_of(metric),
                evidence={"decision": decision.get("decision"), **evidence},
            )
        )
    return found


def _history_verdicts(excluded: Mapping[str, Mapping[str, Any]]) -> list[VerdictRow]:
    """Nodes left out on their history: a verdict that says so, not a new flag."""
    return [
        VerdictRow(
            node=name,
            source="history",
            flagged=False,
            metric="",
            layer="",
            reason=str(host.get("reason", "")),
            evidence=dict(host.get("evidence") or {}),
        )
        for name, host in excluded.items()
        if (host.get("evidence") or {}).get("source") == HISTORY_SOURCE
    ]


def _straggler_verdicts(stragglers: Mapping[str, Any], used: Sequence[str]) -> list[VerdictRow]:
    found = []
    for row in stragglers.get("nodes") or []:
        if row.get("verdict") in (None, "ok") or str(row.get("node")) not in used:
            continue
        metric = str(row.get("worst_metric") or "await")
        found.append(
            VerdictRow(
                node=str(row["node"]),
                source="iostat",
                flagged=True,
                metric=metric,
                layer="device",
                reason=f"iostat: {row['verdict']}",
                pattern=_pattern(row.get("pattern"), row.get("first_slow_s")),
                onset_s=finite_number(row.get("first_slow_s")),
                value=finite_number(row.get("worst_ms")),
                typical=finite_number(row.get("others_ms")),
                unit="ms",
                evidence=dict(row),
            )
        )
    return found


def _live_verdicts(document: Verdicts) -> list[VerdictRow]:
    """The slow verdicts of ``verdicts.json``, each phase's as a row of its own."""
    found = []
    for verdict in document.slow():
        figures = verdict.figures
        spans = ", ".join(
            f"t+{span.start_s:g} s to {'the end' if span.end_s is None else f't+{span.end_s:g} s'}"
            for span in verdict.intervals
        )
        pattern = f"{verdict.pattern} ({spans})" if spans else verdict.pattern
        in_ms = figures.unit == "ms"
        what = f"{verdict.op} {verdict.metric}" if verdict.op else verdict.metric
        found.append(
            VerdictRow(
                node=verdict.node,
                source="live",
                flagged=True,
                metric=f"{verdict.phase} {what}" if verdict.kind == "node" else f"{what} asymmetry",
                layer=verdict.layer or "",
                reason=verdict.verdict,
                pattern=pattern,
                onset_s=verdict.onset_s,
                value=figures.p50,
                typical=figures.others_p50,
                unit=figures.unit,
                p50_ms=figures.p50 if in_ms else None,
                p99_ms=figures.p99 if in_ms else None,
                evidence=verdict.model_dump(mode="json", exclude={"node"}),
            )
        )
    return found


def _pattern(pattern: Any, first_s: Any, last_s: Any = None, when: Any = None) -> str:
    """The pattern in words: ``when`` where the source gives it, else from its
    first and last slow seconds (results written before the patterns had spans)."""
    if when:
        return str(when)
    if pattern == "whole":
        return "whole run"
    if pattern == "constant":
        return "whole run"
    if pattern == "passing":
        first, last = finite_number(first_s), finite_number(last_s)
        span = f"t+{first:g} s" if first is not None else ""
        if span and last is not None:
            span += f" to t+{last:g} s"
        return f"passing ({span})" if span else "passing"
    if pattern in ("onset", "recovered", "intermittent"):
        first = finite_number(first_s)
        return f"{pattern} (from t+{first:g} s)" if first is not None else str(pattern)
    return ""


def _engine_figures(
    run: RunData, used: Sequence[str]
) -> tuple[dict[str, dict[str, Any]], list[VerdictRow]]:
    """Per node: the engine's storage-op figures; a verdict for each slow node."""
    assert run.traces is not None
    stats = trace_stats(run.traces, iostat=run.iostat, all_nodes=used, parts=STORAGE_PART)
    if stats.node_table is None or stats.node_table.empty:
        return {}, []
    table = stats.node_table.set_index("node")
    persistence = (
        stats.persistence.set_index("node") if stats.persistence is not None else pd.DataFrame()
    )
    cross = stats.crosscheck.set_index("node") if stats.crosscheck is not None else pd.DataFrame()
    figures = {
        str(node): {
            "ops": int(row["ops"]),
            "mean_ms": finite_number(row["mean_ms"]),
            "p50_ms": finite_number(row["p50_ms"]),
            "p99_ms": finite_number(row["p99_ms"]),
            "slow_pct": finite_number(row["slow_pct"]),
            "read_mean_ms": finite_number(row["read_mean_ms"]),
            "write_mean_ms": finite_number(row["write_mean_ms"]),
        }
        for node, row in table.iterrows()
    }
    verdicts = []
    for node in stats.slow_nodes:
        mine = figures[node]
        read, write = mine["read_mean_ms"], mine["write_mean_ms"]
        op = "read" if read is not None and (write is None or read >= write) else "write"
        column = f"{op}_mean_ms"
        others = [row[column] for name, row in figures.items()
                  if name != node and row[column] is not None]  # fmt: skip
        typical = float(pd.Series(others).median()) if others else None
        disk_slow = bool(cross.loc[node, "disk_slow"]) if node in cross.index else None
        layer = "device" if disk_slow else "above the device" if disk_slow is False else ""
        steady = persistence.loc[node] if node in persistence.index else None
        pattern = (
            _pattern(
                steady["pattern"], steady["first_slow_s"], steady["last_slow_s"], steady.get("when")
            )
            if steady is not None
            else ""
        )
        value = mine[column]
        shown = f"{value:.3g} ms" if value is not None else "?"
        against = f" vs {typical:.3g} ms on the other nodes" if typical is not None else ""
        where = f"; {cross.at[node, 'verdict']!s}" if node in cross.index else ""
        verdicts.append(
            VerdictRow(
                node=node,
                source="engine",
                flagged=True,
                metric=f"{op} storage op mean",
                layer=layer,
                reason=(
                    f"engine: {op}s {shown} per storage op{against}, {mine['slow_pct']:.3g}% "
                    f"over {stats.slow_ms:g} ms{', ' + pattern if pattern else ''}{where}"
                ),
                pattern=pattern,
                onset_s=finite_number(steady["first_slow_s"]) if steady is not None else None,
                value=value,
                typical=typical,
                unit="ms",
                p50_ms=mine["p50_ms"],
                p99_ms=mine["p99_ms"],
                evidence={**mine, "crosscheck": cross.loc[node].to_dict()}
                if node in cross.index
                else dict(mine),
            )
        )
    return figures, verdicts


def _preflight_figures(preflight: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per node: the preflight's decision and measured values."""
    found = {}
    for decision in preflight.get("decisions") or []:
        values = (decision.get("evidence") or {}).get("values") or {}
        found[str(decision["node"])] = {
            "decision": str(decision.get("decision", "")),
            "values": {key: finite_number(value) for key, value in values.items()},
        }
    return found


def _node_row(
    name: str,
    used: Sequence[str],
    excluded: Mapping[str, Mapping[str, Any]],
    verdicts: Sequence[VerdictRow],
    engine: Mapping[str, Any],
    preflight: Mapping[str, Any],
) -> NodeRow:
    mine = [verdict for verdict in verdicts if verdict.node == name]
    flagged = sorted(
        (verdict for verdict in mine if verdict.flagged),
        key=lambda verdict: SOURCE_ORDER.index(verdict.source),
    )
    history = next((verdict for verdict in mine if verdict.source == HISTORY_SOURCE), None)
    worst = flagged[0] if flagged else None
    values = preflight.get("values") or {}
    excluded_by = None
    if name in excluded:
        excluded_by = "history" if history is not None else "preflight"
    return NodeRow(
        node=name,
        role="used" if name in used else "excluded",
        flagged=worst is not None,
        excluded_by=excluded_by,  # type: ignore[arg-type]
        metric=worst.metric if worst else "",
        layer=worst.layer if worst else "",
        pattern=worst.pattern if worst else "",
        onset_s=worst.onset_s if worst else None,
        value=worst.value if worst else None,
        typical=worst.typical if worst else None,
        unit=worst.unit if worst else "",
        reason=worst.reason if worst else history.reason if history else "",
        ops=engine.get("ops"),
        mean_ms=engine.get("mean_ms"),
        p50_ms=engine.get("p50_ms"),
        p99_ms=engine.get("p99_ms"),
        slow_pct=engine.get("slow_pct"),
        read_mean_ms=engine.get("read_mean_ms"),
        write_mean_ms=engine.get("write_mean_ms"),
        preflight_decision=str(preflight.get("decision", "")),
        preflight_read_MiB_s=finite_number(values.get("read_bw_MiB_s")),
        preflight_write_MiB_s=finite_number(values.get("write_bw_MiB_s")),
        figures={"preflight": values} if values else {},
    )


def _figures(run: RunData) -> list[FigureRow]:
    """Every repetition's figures per phase (the samples trends compare)."""
    if run.repetitions is None:
        return []
    found = []
    frame = run.repetitions
    for position, (_, row) in enumerate(frame.iterrows()):
        repetition = int(row["repetition"]) if "repetition" in frame.columns else position
        for _, column in REPETITION_METRICS:
            if column in frame.columns:
                value = finite_number(row[column])
                if value is not None:
                    found.append(FigureRow(str(row["phase"]), column, repetition, value))
    return found


def finite_number(value: Any) -> float | None:
    """``value`` as a finite float, else None (NaN, text, missing)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _size(value: Any) -> str:
    return format_size(int(value)) if isinstance(value, int) else str(value)
