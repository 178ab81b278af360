"""One node's HTML page: its status, its runs and a plot of its figures over time
(the report's own model and renderer, ``analysis.reports``)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from analysis.reports.html import render_html
from analysis.reports.model import Figure, Report, Table
from analysis.reports.plots import node_over_runs
from benchfs.history.model import NodeRun
from benchfs.history.status import NodeSummary
from benchfs.history.views import RUN_HEADERS, VERDICT_HEADERS, run_reason_lines, run_rows


def write_node_page(summary: NodeSummary, runs: Sequence[NodeRun], path: Path) -> Path:
    """Write the page of ``summary.node`` to ``path`` (the plot embedded in it)."""
    report = Report(f"BenchFS node {summary.node} ({summary.cluster})")
    section = report.section("Status")
    section.bullets.append(f"{summary.status}: {summary.reason}")
    section.bullets.append(
        f"{summary.runs_seen} runs seen, {summary.runs_flagged} flagged"
        + (f", {summary.runs_left_out} left out on its history" if summary.runs_left_out else "")
    )
    section = report.section("Runs")
    frame = pd.DataFrame(run_rows(runs), columns=[*RUN_HEADERS, *VERDICT_HEADERS])
    section.tables.append(Table("One line per run, oldest first", frame))
    section.bullets += run_reason_lines(runs)
    figures = pd.DataFrame(
        {
            "started": [pd.Timestamp(run.started_at) for run in runs],
            "flagged": [run.row.flagged for run in runs],
            "mean_ms": [run.row.mean_ms for run in runs],
            "p99_ms": [run.row.p99_ms for run in runs],
            "preflight_read_MiB_s": [run.row.preflight_read_MiB_s for run in runs],
            "preflight_write_MiB_s": [run.row.preflight_write_MiB_s for run in runs],
        }
    )
    with tempfile.TemporaryDirectory(prefix="benchfs-node-") as scratch:
        plot = node_over_runs(figures, summary.node, Path(scratch) / "node.png")
        report.section("Over time").figures.append(Figure(f"{summary.node} run by run", plot))
        path.write_text(render_html(report), encoding="utf-8")
    return path
