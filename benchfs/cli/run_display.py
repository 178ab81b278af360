"""What `benchfs run` shows: steps and live bandwidth while it runs, the
phases' tables at the end (``phase_display``, ``metadata_display``,
``suite_display``; rich lives here, apart from the command's options)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from benchfs.cli.console import make_console
from benchfs.cli.metadata_display import metadata_grid
from benchfs.cli.phase_display import data_phase_grids
from benchfs.cli.suite_display import suite_grid
from benchfs.cli.tables import View, print_grid
from benchfs.config.plan import SweepPoint
from benchfs.run.observer import PointResult, RunObserver
from benchfs.workload.metadata_spec import MDTEST_DIR_NAMES, TREE_PHASE_NAMES
from benchfs.workload.progress import PhaseProgress

console = make_console()
err_console = make_console(stderr=True)

MiB = 1024 * 1024


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
            # The phase file is polled: a phase's "done" is missed when the next one
            # starts within a poll, so its bar stops when the next phase shows up,
            # not with the run.
            for earlier in self.tasks.values():
                self._finish(earlier)
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
            self._finish(task)
        else:
            self.bars.update(task, completed=done, figures=figures)

    def _finish(self, task: TaskID) -> None:
        """Fill a phase's bar and stop its clock, once (a later call would move it)."""
        assert self.bars is not None
        (shown,) = [t for t in self.bars.tasks if t.id == task]
        if shown.stop_time is None:
            self.bars.update(task, completed=shown.total)
            self.bars.stop_task(task)

    def alert(self, message: str) -> None:
        # Above the bars while they run (rich keeps them at the bottom); one line, however
        # long, the terminal wraps it.
        err_console.print(f"[bold yellow]straggler:[/] {escape(self.prefix + message)}",
                          highlight=False, soft_wrap=True)  # fmt: skip

    def point_finished(self, result: PointResult) -> None:
        if self.bars is not None:
            self.bars.stop()
            self.bars = None


def print_results(results: list[PointResult], json_output: bool, view: View | None = None) -> None:
    if json_output:
        documents = [
            {
                **(result.summary or {}),
                "results_dir": str(result.run_dir),
                "notes": result.notes,
                "stragglers": result.stragglers,
                "history": result.history,
            }
            for result in results
        ]
        typer.echo(json.dumps(documents[0] if len(documents) == 1 else documents, indent=2))
        for result in results:
            err_console.print(f"results: {escape(str(result.run_dir))}", highlight=False)
        return
    view = view or View()
    for result in results:
        summary = result.summary
        suite = None if summary is None else suite_grid(summary)
        grids = [suite] if suite is not None else []
        if suite is None and summary is not None:
            metadata = metadata_grid(summary)
            grids += data_phase_grids(summary) + ([metadata] if metadata is not None else [])
        for grid in grids:
            print_grid(console, grid, view)
        for line in result.stragglers:
            console.print(f"[yellow]{escape(line)}[/]", highlight=False)
        for note in result.notes:
            console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
        # One line the terminal wraps, so the path copies whole.
        console.print(f"results: {escape(str(result.run_dir))}", highlight=False, soft_wrap=True)
    view.check()
