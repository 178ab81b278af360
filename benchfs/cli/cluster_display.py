"""The console form of `benchfs bench cluster`: each side's median figures,
then every comparison's paired ratios with their spread."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from benchfs.cli.console import plain
from benchfs.cli.tables import NAME, Column, Grid, View, print_grid
from benchfs.config.sizes import format_size

if TYPE_CHECKING:  # the benchmark module pulls in the orchestrator: imported when it runs
    from benchfs.bench.cluster import ClusterBenchReport

SIDE_NAMES = {"run": "benchfs run", "fio": "fio", "posix": "posix:"}


def print_cluster_report(console: Console, report: ClusterBenchReport, view: View) -> None:
    print_grid(console, _sides_grid(report), view)
    print_grid(console, _ratios_grid(report), view)
    for side in report.case.sides:
        console.print(f"  {report.case.describe(side)}", highlight=False)
    start, end = report.load_start, report.load_end
    console.print(
        f"  load average (1/5/15 min): {start[0]:.2f} {start[1]:.2f} {start[2]:.2f} at the "
        f"start, {end[0]:.2f} {end[1]:.2f} {end[2]:.2f} at the end",
        highlight=False,
    )
    run_dirs = [Path(d) for r in report.rounds for d in r.results_dirs.values()]
    if run_dirs:
        console.print(
            f"  results: {len(run_dirs)} runs in {plain(run_dirs[0].parent)} (--json names each)",
            highlight=False,
        )


def _sides_grid(report: ClusterBenchReport) -> Grid:
    case = report.case
    names = " vs ".join(SIDE_NAMES[side] for side in case.sides)
    grid = Grid.of(
        f"{names} on {report.directory}: {case.jobs} jobs, "
        f"{format_size(case.total_bytes)} in {format_size(case.transfer_size)} transfers, "
        f"queue depth {case.queue_depth} per job on every side, all O_DIRECT, "
        f"{len(report.rounds)} paired rounds",
        ["side (median)", "write (MiB/s)", "read (MiB/s)", "read/write"],
        [],
    )
    for side in case.sides:
        figures = report.median(side)
        grid.add_row(
            SIDE_NAMES[side], f"{figures.write_MiBps:,.0f}", f"{figures.read_MiBps:,.0f}",
            f"{figures.parity:.2f}",
        )  # fmt: skip
    return grid


def _ratios_grid(report: ClusterBenchReport) -> Grid:
    """A row a comparison and direction: the median of the per-round ratios,
    the quartiles and the range, and whether the median meets the target."""
    from benchfs.bench.cluster import TARGET

    grid = Grid(
        "",
        [Column("ratio", key=True), Column("op", NAME, key=True), Column("median"),
         Column("IQR"), Column("min-max"), Column(f"target >= {TARGET:.2f}", NAME)],
        caption="median: of the per-round ratios; the target is judged on it, and k/n says "
        "in how many rounds the pair alone meets it",
    )  # fmt: skip
    for comparison in report.comparisons:
        paired = comparison.paired
        q1, q3 = paired.quartiles
        verdict = "met" if comparison.met else "MISSED"
        grid.add_row(
            f"run / {SIDE_NAMES[comparison.reference]}", comparison.op, f"{paired.median:.2f}",
            f"{q1:.2f}-{q3:.2f}", f"{paired.low:.2f}-{paired.high:.2f}",
            f"{verdict} {comparison.rounds_met}/{paired.rounds}",
        )  # fmt: skip
    return grid
