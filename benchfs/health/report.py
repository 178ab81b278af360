"""Write a diagnose report as Markdown and JSON; also the rows the terminal table shows.

The Markdown opens with the verdict and the findings in plain words, then
one row per node (when several), then every test's figures with units.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from analysis.figures import figure
from benchfs.health.assess import metric_value
from benchfs.health.diagnose import DiagnoseReport
from benchfs.health.model import NodeAssessment, NodeMeasurement, TestResult

NS_PER_MS = 1e6


@dataclass(frozen=True)
class Column:
    header: str
    test: str
    metric: str
    scale: float = 1.0


# The one-row-per-node summary (terminal and Markdown), units in the headers.
NODE_COLUMNS: tuple[Column, ...] = (
    Column("seq wr MiB/s", "seq_write_direct", "write_bw_MiB_s"),
    Column("seq rd MiB/s", "seq_read_direct", "read_bw_MiB_s"),
    Column("4k IOPS", "rand_rw", "rw_iops"),
    Column("4k rd p99 ms", "rand_rw", "read_p99_ns", NS_PER_MS),
    Column("fsync IOPS", "fsync_write", "write_iops"),
    Column("creates/s", "metadata", "create_ops_s"),
    Column("rd await ms", "seq_read_direct", "r_await_ms"),
)
TEST_HEADERS = (
    "test",
    "read MiB/s",
    "write MiB/s",
    "IOPS (metadata: create/stat/delete per s)",
    "p50 ms",
    "p99 ms",
    "p99.9 ms",
    "max ms",
    "r_await ms",
    "w_await ms",
    "util %",
    "aqu-sz",
    "assessment",
)


def node_row(node: NodeMeasurement, assessment: NodeAssessment, short: bool = False) -> list[str]:
    """One node's key figures; ``short`` counts the findings instead of naming them."""
    cells = [node.node, assessment.status.upper()]
    for column in NODE_COLUMNS:
        value = metric_value(node, column.test, column.metric)
        cells.append(figure(value / column.scale if value is not None else None))
    if short:
        levels = [f.level for f in assessment.problems]
        counts = [f"{levels.count(level)} {level}" for level in ("degraded", "warn")]
        flagged = ", ".join(count for count in counts if not count.startswith("0 "))
    else:
        flagged = ", ".join(dict.fromkeys(f.label() for f in assessment.problems))
    cells.append(flagged or "-")
    return cells


def latency_prefix(test: TestResult) -> str | None:
    """Which latency a test is judged by: fsync's own, or the slower direction's."""
    if "sync_p50_ns" in test.metrics:
        return "sync"
    reads, writes = test.metrics.get("read_p99_ns"), test.metrics.get("write_p99_ns")
    if reads is not None and (writes is None or reads >= writes):
        return "read"
    if writes is not None:
        return "write"
    if "create_p50_ns" in test.metrics:
        return "create"
    return None


def test_row(test: TestResult, assessment: NodeAssessment) -> list[str]:
    words = [f.message for f in assessment.findings if f.test == test.name and f.level != "ok"]
    verdict = "; ".join(words) if words else "ok"
    if test.error:
        verdict = f"ERROR: {test.error}"
    metrics, prefix = test.metrics, latency_prefix(test)

    def latency(suffix: str) -> str:
        value = metrics.get(f"{prefix}_{suffix}_ns") if prefix else None
        return figure(value / NS_PER_MS if value is not None else None)

    iops = figure(((metrics.get("read_iops") or 0.0) + (metrics.get("write_iops") or 0.0)) or None)
    if "create_ops_s" in metrics:  # creates / stats / deletes per second
        rates = (metrics.get(f"{phase}_ops_s") for phase in ("create", "stat", "delete"))
        iops = " / ".join(figure(rate) for rate in rates)
    latency_note = f" ({prefix})" if prefix and prefix not in ("read", "write") else ""
    return [
        test.name + latency_note,
        figure(metrics.get("read_bw_MiB_s")),
        figure(metrics.get("write_bw_MiB_s")),
        iops,
        latency("p50"),
        latency("p99"),
        latency("p99.9"),
        latency("max"),
        figure(test.iostat.get("r_await_ms")),
        figure(test.iostat.get("w_await_ms")),
        figure(test.iostat.get("util_pct")),
        figure(test.iostat.get("aqu_sz")),
        verdict,
    ]


# The terminal's compact table (latencies in ms; util and aqu-sz only in the Markdown).
TERMINAL_HEADERS = (
    "test",
    "MiB/s r/w",
    "IOPS",
    "p50 ms",
    "p99 ms",
    "p99.9 ms",
    "max ms",
    "await ms r/w",
    "verdict",
)


def terminal_row(test: TestResult, assessment: NodeAssessment) -> list[str]:
    """A compact row for an 80-column terminal; the findings are printed below the table."""
    full = test_row(test, assessment)
    levels = {f.level for f in assessment.findings if f.test == test.name}
    verdict = "warn" if levels else "ok"
    if "degraded" in levels:
        verdict = "DEGRADED"
    if test.error:
        verdict = "ERROR"
    creates = test.metrics.get("create_ops_s")
    # The rate of a metadata test is its creates per second, which its name says.
    rate = figure(creates) if creates is not None else full[3]
    name = f"{test.name} (creates/s)" if creates is not None else full[0]
    bandwidth = "/".join(cell for cell in (full[1], full[2]) if cell != "-") or "-"
    awaits = "/".join(figure(test.iostat.get(key), 2) for key in ("r_await_ms", "w_await_ms"))
    return [name, bandwidth, rate, full[4], full[5], full[6], full[7], awaits, verdict]


def render_markdown(report: DiagnoseReport) -> str:
    by_node = {assessment.node: assessment for assessment in report.assessments}
    mode = "quick" if report.quick else "full"
    lines = [
        "# Storage health report",
        "",
        f"**Verdict: {report.status.upper()}** (exit code {report.exit_code}) - "
        f"{len(report.nodes)} node(s), directory `{report.directory}`, {mode} run, "
        f"{report.started_at} to {report.finished_at}",
        "",
        "## Findings",
        "",
    ]
    for node in report.nodes:
        assessment = by_node[node.node]
        problems = assessment.problems
        if not problems:
            lines.append(f"- **{node.node}**: healthy; every figure within its limits.")
            continue
        lines.append(f"- **{node.node}** ({assessment.status}):")
        lines += [f"  - [{f.level}] {f.test + ': ' if f.test else ''}{f.message}" for f in problems]
    lines.append("")
    if len(report.nodes) > 1:
        lines += ["## Nodes", ""]
        headers = ["node", "status", *(c.header for c in NODE_COLUMNS), "flagged"]
        lines += _table(headers, [node_row(n, by_node[n.node]) for n in report.nodes])
        lines.append("")
    if report.policy is not None:
        lines += ["## Preflight policy", ""]
        excluded = ", ".join(report.policy.excluded) or "none"
        lines.append(
            f"A preflight would exclude: **{excluded}** (kept {len(report.policy.kept)}, "
            f"never fewer than {report.policy.minimum_nodes})."
        )
        lines.append("")
        lines += [
            f"- {d.node}: {'EXCLUDE' if d.excluded else 'keep'} - {d.reason}"
            for d in report.policy.decisions
        ]
        lines.append("")
    for node in report.nodes:
        lines += [f"## Node {node.node}", ""]
        if node.error:
            lines += [f"Could not run: {node.error}", ""]
            continue
        where = node.filesystem_text or f"{node.directory} (file system unknown)"
        lines.append(f"- Where: {where}")
        if node.filesystem:
            for note in node.filesystem.get("notes", ()):
                lines.append(f"- Note: {note}")
        lines.append(f"- Host: {node.hostname}; took {node.duration_s:.1f} s")
        lines.append("")
        rows = [test_row(test, by_node[node.node]) for test in node.tests]
        lines += _table(list(TEST_HEADERS), rows)
        lines.append("")
        lines += [f"- `{test.name}`: {test.title}" for test in node.tests]
        lines.append("")
    lines += ["## Thresholds", "", "Defaults and meaning: docs/DIAGNOSE.md.", ""]
    lines += _table(
        ["key", "value"],
        [[key, f"{value:g}"] for key, value in report.thresholds.to_dict().items()],
    )
    lines.append("")
    return "\n".join(lines)


def write_reports(report: DiagnoseReport, directory: Path) -> tuple[Path, Path]:
    """Write ``diagnose.md`` and ``diagnose.json`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    markdown = directory / "diagnose.md"
    document = directory / "diagnose.json"
    markdown.write_text(render_markdown(report))
    document.write_text(to_json(report) + "\n")
    return markdown, document


def to_json(report: DiagnoseReport) -> str:
    # json, not pydantic's writer, so that the document's text stays as it was
    # (ASCII escapes, NaN where a figure is one).
    return json.dumps(report.document().model_dump(), indent=2)


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    def clean(cell: str) -> str:
        return cell.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(clean(cell) for cell in row) + " |" for row in rows]
    return lines
