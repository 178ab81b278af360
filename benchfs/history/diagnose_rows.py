"""A ``benchfs diagnose`` report as rows of the history: each node measured, its
status, and every degraded finding with the figure and limit behind it."""

from __future__ import annotations

from dataclasses import asdict

from analysis.diagnose import DiagnoseDocument, Finding, NodeMeasurement
from benchfs import __version__
from benchfs.history.model import NodeRow, RunRecord, RunRow, VerdictRow
from benchfs.history.rows import finite_number, run_uid, unit_of

DIAGNOSE_LAYER = "storage (diagnose)"


def diagnose_record(
    document: DiagnoseDocument, *, cluster: str, command: str, results_dir: str = ""
) -> RunRecord:
    """Rows of a ``benchfs-diagnose`` document."""
    names = [node.node for node in document.nodes]
    started = document.started_at.replace("+00:00", "Z")
    verdicts: list[VerdictRow] = []
    rows: list[NodeRow] = []
    excluded = set(document.preflight_policy.excluded if document.preflight_policy else ())
    for node in document.nodes:
        name, status, measurement = node.node, node.status, node.measurement
        degraded = [finding for finding in node.findings if finding.level == "degraded"]
        found = [_verdict(name, finding) for finding in degraded]
        if measurement.error:
            found.insert(0, _error_verdict(name, measurement.error))
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
        uid=run_uid("diagnose", started, document.directory, ",".join(names)),
        kind="diagnose",
        cluster=cluster,
        label="diagnose",
        results_dir=results_dir,
        command=command,
        started_at=started,
        ended_at=document.finished_at.replace("+00:00", "Z") or None,
        status="completed" if document.status != "error" else "failed",
        error=None,
        workload_key=f"diagnose quick={document.quick} nodes={len(names)}",
        node_count=len(names),
        benchfs_version=__version__,
        details={"directory": document.directory, "status": document.status},
    )
    return RunRecord(run=run, nodes=rows, verdicts=verdicts)


def _verdict(node: str, finding: Finding) -> VerdictRow:
    metric = finding.metric or finding.test
    test = finding.test
    return VerdictRow(
        node=node,
        source="diagnose",
        flagged=True,
        metric=f"{test} {metric}".strip() if test and test not in metric else metric,
        layer=DIAGNOSE_LAYER,
        reason=f"diagnose: {finding.message}",
        value=finite_number(finding.value),
        unit=unit_of(metric),
        evidence=asdict(finding),
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


def _metric(measurement: NodeMeasurement, test: str, name: str) -> float | None:
    return finite_number(measurement.metric(test, name))
