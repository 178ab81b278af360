"""Write report.md, report.html and plots/ into a results directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.layout import RunLayout
from analysis.loaders.run import RunData, load_run
from analysis.reports.build import build_report
from analysis.reports.html import render_html
from analysis.reports.markdown import render_markdown
from analysis.timing import step


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    plots: list[Path]


def write_report(
    run_dir: Path | str, *, out_dir: Path | str | None = None, allow_partial: bool = False
) -> ReportFiles:
    """Load the run and write its report (into the run directory unless ``out_dir``)."""
    run = load_run(run_dir, allow_partial=allow_partial)
    return write_run_report(run, Path(out_dir) if out_dir else run.path)


def write_run_report(run: RunData, out_dir: Path) -> ReportFiles:
    # Absolute: figures are linked relative to the report, whatever the cwd.
    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = RunLayout(out_dir)
    report = build_report(run, paths.plots_dir)
    markdown, html = paths.report_markdown, paths.report_html
    with step("markdown"):
        markdown.write_text(render_markdown(report, base=out_dir))
    with step("html"):
        html.write_text(render_html(report, base=out_dir))
    figures = [figure.path for section in report.sections for figure in section.figures]
    return ReportFiles(markdown, html, figures)
