"""A ``benchfs diagnose`` report as rows of the history: each node measured, its
status, and every degraded finding with the figure and limit behind it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchfs import __version__
from benchfs.history.model import NodeRow, RunRecord, RunRow, VerdictRow
from benchfs.history.rows import finite_number, run_uid, unit_of

DIAGNOSE_LAYER = "storage (diagnose)"


def diagnose_record(
    document: Mapping[str, Any], *, cluster: str, command: str, results_dir: str = ""
) -> RunRecord:
    """Rows of a ``benchfs-diagnose`` document (``DiagnoseReport.to_dict()``)."""
    nodes = document.get("nodes") or []
    names = [str(node["node"]) for node in nodes]
    started = str(document["started_at"]).replace("+00:00", "Z")
    verdicts: list[VerdictRow] = []
    rows: list[NodeRow] = []
    excluded = set((document.get("preflight_policy") or {}).get("excluded") or [])
    for node in nodes:
        name = str(node["node"])
        status = str(node.get("status", "error"))
        measurement = node.get("measurement") or {}
        found = [
            _verdict(name, finding)
            for finding in node.get("findings") or []
            if finding.get("level") == "degraded"
        ]
        if measurement.get("error"):
            found.insert(0, _error_verdict(name, str(measurement["error"])))
        verdicts += found
        worst = found[0] if found else None
        rows.append(
            NodeRow(
                node=name,
                role="measured",
                flagged=status != "healthy",
                metric=worst.metric if worst else "",
                layer=worst.layer if worst else "",
                value=worst.value if worst else None,
                typical=worst.typical if worst else None,
                unit=worst.unit if worst else "",
                reason=worst.reason if worst else f"diagnose: {status}",
                preflight_decision="would be excluded" if name in excluded else "",
                preflight_read_MiB_s=_metric(measurement, "seq_read_direct", "read_bw_MiB_s"),
                preflight_write_MiB_s=_metric(measurement, "seq_write_direct", "write_bw_MiB_s"),
                figures={"status": status},
            )
        )
    run = RunRow(
        uid=run_uid("diagnose", started, document.get("directory"), ",".join(names)),
        kind="diagnose",
        cluster=cluster,
        label="diagnose",
        results_dir=results_dir,
        command=command,
        started_at=started,
        ended_at=str(document.get("finished_at") or "").replace("+00:00", "Z") or None,
        status="completed" if document.get("status") != "error" else "failed",
        error=None,
        workload_key=f"diagnose quick={bool(document.get('quick'))} nodes={len(names)}",
        node_count=len(names),
        benchfs_version=__version__,
        details={"directory": document.get("directory"), "status": document.get("status")},
    )
    return RunRecord(run=run, nodes=rows, verdicts=verdicts)


def _verdict(node: str, finding: Mapping[str, Any]) -> VerdictRow:
    metric = str(finding.get("metric") or finding.get("test") or "")
    test = str(finding.get("test") or "")
    return VerdictRow(
        node=node,
        source="diagnose",
        flagged=True,
        metric=f"{test} {metric}".strip() if test and test not in metric else metric,
        layer=DIAGNOSE_LAYER,
        reason=f"diagnose: {finding.get('message', '')}",
        value=finite_number(finding.get("value")),
        unit=unit_of(metric),
        evidence=dict(finding),
    )


def _error_verdict(node: str, error: str) -> VerdictRow:
    return VerdictRow(
        node=node,
        source="diagnose",
        flagged=True,
        metric="diagnose error",
        layer=DIAGNOSE_LAYER,
        reason=f"diagnose could not run: {error}",
    )


def _metric(measurement: Mapping[str, Any], test: str, name: str) -> float | None:
    for result in measurement.get("tests") or []:
        if result.get("name") == test and not result.get("error"):
            return finite_number((result.get("metrics") or {}).get(name))
    return None
