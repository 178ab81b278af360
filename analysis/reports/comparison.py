"""The comparison of two runs (or sweeps) as a table people read and as a
Markdown/HTML report (compare.md, compare.html, plots/)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.compare import NO_ESTIMATE_RUN, Comparison
from analysis.reports import plots
from analysis.reports.columns import cell, header
from analysis.reports.html import render_html
from analysis.reports.markdown import render_markdown
from analysis.reports.model import Figure, Report, Table
from analysis.stats import noise

# Metrics whose per-repetition values are plotted, with their axis labels.
PLOTTED = (("bwMeanMIB", "bandwidth (MiB/s)"), ("p99_us", "p99 latency (us)"))


@dataclass(frozen=True)
class ComparisonFiles:
    markdown: Path
    html: Path
    plots: list[Path]


def comparison_table(comparison: Comparison) -> pd.DataFrame:
    """The workload rows, formatted: A and B (means of the repetitions), the change,
    its interval, p, the verdict (with 'better'/'worse' for a change), repetitions
    of A and B and those a claim would need."""
    level = f"{comparison.method.confidence:.0%}"
    metrics = _per_run(comparison, one_value=False)
    table = pd.DataFrame(
        {
            "phase": metrics["phase"],
            "metric": [header(str(metric)) for metric in metrics["metric"]],
            "A": metrics["A"],
            "B": metrics["B"],
            "change_pct": metrics["change_pct"],
            f"{level} CI_pct": [
                _interval(low, high)
                for low, high in zip(metrics["ci_low_pct"], metrics["ci_high_pct"], strict=True)
            ],
            "p": metrics["p_value"],
            "verdict": [
                f"{verdict} ({direction})" if direction else str(verdict)
                for verdict, direction in zip(metrics["verdict"], metrics["direction"], strict=True)
            ],
            "reps A/B": [f"{a}/{b}" for a, b in zip(metrics["n_A"], metrics["n_B"], strict=True)],
            "reps_needed": [
                _needed(n, v)
                for n, v in zip(metrics["reps_needed"], metrics["verdict"], strict=True)
            ],
        }
    )
    return _with_point(table, metrics)


def one_value_table(comparison: Comparison) -> pd.DataFrame:
    """Figures that exist once per run (engine traces, error totals): their change,
    and no verdict, since one value per run carries no noise estimate."""
    metrics = _per_run(comparison, one_value=True)
    table = pd.DataFrame(
        {
            "phase": metrics["phase"],
            "metric": [header(str(metric)) for metric in metrics["metric"]],
            "A": metrics["A"],
            "B": metrics["B"],
            "change_pct": metrics["change_pct"],
        }
    )
    return _with_point(table, metrics)


ONE_VALUE_CAPTION = "One value per run (engine traces, totals): no noise estimate"


def verdict_lines(comparison: Comparison) -> list[str]:
    """What the comparison says, in sentences: the changes first."""
    metrics = comparison.metrics
    lines = []
    changed = comparison.changed()
    for record in changed.to_dict("records"):
        where = f"{record['point']}: " if "point" in record else ""
        interval = _interval(record["ci_low_pct"], record["ci_high_pct"])
        lines.append(
            f"changed ({record['direction']}): {where}{record['phase']} {record['metric']} "
            f"{_signed(record['change_pct'])}% ({interval} %, p {cell(record['p_value'])})"
        )
    tested = comparison.tested()
    if tested and changed.empty:
        lines.append(f"no tested metric changed beyond run-to-run noise ({tested} rows tested)")
    one = int((metrics["verdict"] == noise.NO_ESTIMATE_ONE).sum())
    if one:
        wanted = metrics["reps_needed"].dropna()
        hint = f" (about {int(wanted.max())} per run would resolve every change seen)" if len(
            wanted) else ""  # fmt: skip
        lines.append(
            f"{one} rows have no noise estimate: a run has 1 repetition; run both with "
            f"--repetitions 5 or more{hint}"
        )
    if tested:
        lines.append(comparison.chance_note())
    lines += comparison.notes
    return lines


def build_comparison_report(
    comparison: Comparison, label_a: str, label_b: str, plots_dir: Path
) -> Report:
    """The report of a comparison; PNGs of per-repetition values go into ``plots_dir``."""
    report = Report(f"BenchFS comparison: {label_a} (A) -> {label_b} (B)")
    report.section("Verdict").bullets += verdict_lines(comparison)
    section = report.section("Per phase and metric")
    section.paragraphs.append(
        "A and B: the mean over the repetitions (per-repetition values are the samples); "
        "change and interval in % of A."
    )
    section.tables.append(Table(f"{label_a} (A) -> {label_b} (B)", comparison_table(comparison)))
    once = one_value_table(comparison)
    if not once.empty:
        section.tables.append(Table(ONE_VALUE_CAPTION, once))
    samples = comparison.samples
    for metric, label in PLOTTED:
        if not samples.empty and (samples["metric"] == metric).any():
            path = plots.repetition_values(
                samples, metric, label, plots_dir / f"compare_{_file_name(metric)}.png"
            )
            section.figures.append(Figure(f"{label} per repetition", path))
    method = report.section("Method")
    method.paragraphs += comparison.method.describe()
    config = report.section("Configuration differences")
    if comparison.config_diff.empty:
        config.paragraphs.append("The effective configurations are identical.")
    else:
        config.tables.append(Table("Keys that differ", comparison.config_diff))
    return report


def write_comparison_report(
    comparison: Comparison, label_a: str, label_b: str, out_dir: Path
) -> ComparisonFiles:
    """Write compare.md, compare.html and plots/compare_*.png into ``out_dir``."""
    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    report = build_comparison_report(comparison, label_a, label_b, out_dir / "plots")
    markdown, html = out_dir / "compare.md", out_dir / "compare.html"
    markdown.write_text(render_markdown(report, base=out_dir))
    html.write_text(render_html(report, base=out_dir))
    figures = [figure.path for section in report.sections for figure in section.figures]
    return ComparisonFiles(markdown, html, figures)


def _per_run(comparison: Comparison, *, one_value: bool) -> pd.DataFrame:
    metrics = comparison.metrics
    once = metrics["verdict"] == NO_ESTIMATE_RUN
    return metrics[once if one_value else ~once].reset_index(drop=True)


def _with_point(table: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    if "point" in metrics.columns:
        table.insert(0, "point", metrics["point"])
    return table


def _interval(low: Any, high: Any) -> str:
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return "-"
    return f"{_signed(low)} .. {_signed(high)}"


def _signed(value: float) -> str:
    text = cell(float(value))
    return text if text.startswith("-") or text == "0" else f"+{text}"


def _needed(needed: Any, verdict: Any) -> str:
    if not pd.isna(needed):
        return f"{int(needed):,}"
    if verdict in (noise.CHANGED, noise.WITHIN_NOISE, noise.NO_ESTIMATE_ONE):
        return f"> {noise.MAX_REPETITIONS:,}" if verdict != noise.NO_ESTIMATE_ONE else "-"
    return "-"


def _file_name(metric: str) -> str:
    return metric.replace(".", "_")
