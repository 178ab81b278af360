"""What `benchfs run` shows: steps and live bandwidth while it runs, a table
per phase at the end (rich lives here, apart from the command's options)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from benchfs.cli.console import make_console
from benchfs.cli.metadata_display import metadata_table
from benchfs.cli.suite_display import suite_table
from benchfs.config.plan import SweepPoint
from benchfs.run.observer import PointResult, RunObserver
from benchfs.workload.metadata_spec import MDTEST_DIR_NAMES, TREE_PHASE_NAMES
from benchfs.workload.progress import PhaseProgress

console = make_console()
err_console = make_console(stderr=True)

MiB = 1024 * 1024
# Columns of the per-phase table: (header with unit, repetition key, summary key, scale).
PHASE_COLUMNS: tuple[tuple[str, str, str, float], ...] = (
    ("bw (MiB/s)", "bwMiB", "bwMeanMIB", 1.0),
    ("time (s)", "totalTime", "MeanTime", 1.0),
    ("first done (s)", "first_done_s", "first_done_s", 1.0),
    ("last done (s)", "last_done_s", "last_done_s", 1.0),
    ("p50 (ms)", "p50_us", "p50_us", 1e-3),
    ("p90 (ms)", "p90_us", "p90_us", 1e-3),
    ("p99 (ms)", "p99_us", "p99_us", 1e-3),
    ("p99.9 (ms)", "p99.9_us", "p99.9_us", 1e-3),
)


class ConsoleObserver(RunObserver):
    """Steps and a progress bar per phase on stderr, with the live bandwidth."""

    def __init__(self) -> None:
        self.run_dir: Path | None = None
        self.prefix = ""
        self.bars: Progress | None = None
        self.tasks: dict[tuple[int, str], TaskID] = {}

    def step(self, message: str) -> None:
        err_console.print(f"[dim]{escape(self.prefix + message)}[/]", highlight=False)

    def point_started(self, point: SweepPoint, count: int, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.prefix = f"[{point.index + 1}/{count}] " if count > 1 else ""
        self.tasks = {}
        described = point.describe()
        text = f"{self.prefix}run {run_dir}" + (f" ({described})" if described else "")
        err_console.print(escape(text), highlight=False)

    def progress(self, progress: PhaseProgress) -> None:
        if self.bars is None:
            bars = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[figures]}"),
                TimeElapsedColumn(),
                console=err_console,
            )
            bars.start()
            # Only once started: a signal inside start() leaves nothing for stop() to undo.
            self.bars = bars
        status = progress.status
        key = (status.repetition, status.phase)
        # A metadata phase counts files or directories, a data phase bytes; a stonewalled
        # data phase ends on time, so its bar measures seconds.
        timed = status.stonewall_s > 0 and not status.expected_items
        total = (
            status.stonewall_s if timed else max(status.expected_items or status.expected_bytes, 1)
        )
        if key not in self.tasks:
            self.tasks[key] = self.bars.add_task(
                escape(f"{self.prefix}{status.phase} (repetition {status.repetition + 1})"),
                total=total,
                figures="",
            )
        task = self.tasks[key]
        done: float
        if status.expected_items:
            done = progress.ops
            dirs = {*MDTEST_DIR_NAMES.values(), *TREE_PHASE_NAMES}
            items = "directories" if status.phase in dirs else "files"
            figures = f"{progress.ops:,} {items}  {progress.ops_per_s:,.0f} ops/s"
        else:
            done = min(progress.elapsed_s, total) if timed else progress.bytes
            figures = f"{progress.bytes / MiB:,.0f} MiB  {progress.bw_mib_s:,.0f} MiB/s"
        if status.state == "done":
            self.bars.update(task, completed=total)
            self.bars.stop_task(task)
        else:
            self.bars.update(task, completed=done, figures=figures)

    def point_finished(self, result: PointResult) -> None:
        if self.bars is not None:
            self.bars.stop()
            self.bars = None


def _cell(value: Any, scale: float) -> str:
    """Three significant digits at most, thousands separators above."""
    if value is None:
        return "-"
    number = float(value) * scale
    if abs(number) >= 100:
        return f"{number:,.0f}"
    return f"{number:.3g}"


def reached(phase_row: dict[str, Any]) -> str:
    """What a phase measured, for its table's title: a mount figure is never
    taken for a native one."""
    target = str(phase_row.get("target") or "benchfs")
    if target != "benchfs":
        return target
    if phase_row.get("interface") == "mount":
        return "BenchFS through the mount"
    return "BenchFS native client"


def phase_tables(summary: dict[str, Any]) -> list[Table]:
    """One table per phase: a row per repetition and the IOR summary row."""
    tables = []
    for phase_row in summary["phases"]:
        if phase_row.get("kind") == "metadata":
            continue
        phase = phase_row["phase"]
        table = Table(
            title=f"{phase} on {reached(phase_row)}: {phase_row.get('numTasks') or '-'} ranks, "
            f"queue depth {phase_row.get('queue_depth') or '-'}, "
            f"{_cell(phase_row.get('xsizeMiB'), 1.0)} MiB per repetition",
            caption=f"bwMaxMIB {_cell(phase_row.get('bwMaxMIB'), 1.0)}, "
            f"bwMinMIB {_cell(phase_row.get('bwMinMIB'), 1.0)}, "
            f"bwStdMIB {_cell(phase_row.get('bwStdMIB'), 1.0)}",
            box=box.SIMPLE_HEAD,
            title_justify="left",
            caption_justify="left",
            pad_edge=False,
            padding=(0, 1, 0, 1),
        )
        rows = [
            [
                str(row["repetition"]),
                *(_cell(row.get(key), scale) for _, key, _, scale in PHASE_COLUMNS),
            ]
            for row in summary["repetitions"]
            if row["phase"] == phase
        ]
        # A tool's rows lack the columns it does not measure (fio: first and last done).
        means = (_cell(phase_row.get(key), scale) for _, _, key, scale in PHASE_COLUMNS)
        rows.append(["mean", *means])
        # Numbers never shrink; headers wrap between words instead.
        headers = ["rep", *(header for header, *_ in PHASE_COLUMNS)]
        for index, header in enumerate(headers):
            width = max(*(len(row[index]) for row in rows), *map(len, header.split()))
            table.add_column(header, justify="left" if index == 0 else "right", width=width)
        for row in rows:
            table.add_row(*row)
        tables.append(table)
    return tables


def print_results(results: list[PointResult], json_output: bool) -> None:
    if json_output:
        documents = [
            {
                **(result.summary or {}),
                "results_dir": str(result.run_dir),
                "notes": result.notes,
                "stragglers": result.stragglers,
            }
            for result in results
        ]
        typer.echo(json.dumps(documents[0] if len(documents) == 1 else documents, indent=2))
        for result in results:
            err_console.print(f"results: {escape(str(result.run_dir))}", highlight=False)
        return
    for result in results:
        suite = None if result.summary is None else suite_table(result.summary)
        if suite is not None:
            console.print(suite)
        elif result.summary is not None:
            for table in phase_tables(result.summary):
                console.print(table)
            metadata = metadata_table(result.summary)
            if metadata is not None:
                console.print(metadata)
        for line in result.stragglers:
            console.print(f"[yellow]{escape(line)}[/]", highlight=False)
        for note in result.notes:
            console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
        console.print(f"results: {escape(str(result.run_dir))}", highlight=False)
