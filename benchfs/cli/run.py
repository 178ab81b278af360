"""`benchfs run`: deploy the file system on the nodes, run the IOR-style
workload, and leave a results directory (see benchfs.run.orchestrate)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from benchfs.cluster.lifecycle import Terminated
from benchfs.config.plan import SweepPoint, apply_overrides, load_config
from benchfs.errors import ConfigError
from benchfs.run.observer import PointResult, RunObserver
from benchfs.run.orchestrate import run_plan
from benchfs.workload.progress import PhaseProgress

console = Console()
err_console = Console(stderr=True)

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
            self.bars = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[figures]}"),
                TimeElapsedColumn(),
                console=err_console,
            )
            self.bars.start()
        status = progress.status
        key = (status.repetition, status.phase)
        if key not in self.tasks:
            self.tasks[key] = self.bars.add_task(
                escape(f"{self.prefix}{status.phase} (repetition {status.repetition + 1})"),
                total=max(status.expected_bytes, 1),
                figures="",
            )
        task = self.tasks[key]
        figures = f"{progress.bytes / MiB:,.0f} MiB  {progress.bw_mib_s:,.0f} MiB/s"
        if status.state == "done":
            self.bars.update(task, completed=max(status.expected_bytes, 1))
            self.bars.stop_task(task)
        else:
            self.bars.update(task, completed=progress.bytes, figures=figures)

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


def phase_tables(summary: dict[str, Any]) -> list[Table]:
    """One table per phase: a row per repetition and the IOR summary row."""
    tables = []
    for phase_row in summary["phases"]:
        phase = phase_row["phase"]
        table = Table(
            title=f"{phase}: {phase_row['numTasks']} ranks, "
            f"{_cell(phase_row['xsizeMiB'], 1.0)} MiB per repetition",
            caption=f"bwMaxMIB {_cell(phase_row['bwMaxMIB'], 1.0)}, "
            f"bwMinMIB {_cell(phase_row['bwMinMIB'], 1.0)}, "
            f"bwStdMIB {_cell(phase_row['bwStdMIB'], 1.0)}",
            box=box.SIMPLE_HEAD,
            title_justify="left",
            caption_justify="left",
            pad_edge=False,
            padding=(0, 1, 0, 1),
        )
        rows = [
            [
                str(row["repetition"]),
                *(_cell(row[key], scale) for _, key, _, scale in PHASE_COLUMNS),
            ]
            for row in summary["repetitions"]
            if row["phase"] == phase
        ]
        rows.append(["mean", *(_cell(phase_row[key], scale) for _, _, key, scale in PHASE_COLUMNS)])
        # Numbers never shrink; headers wrap between words instead.
        headers = ["rep", *(header for header, *_ in PHASE_COLUMNS)]
        for index, header in enumerate(headers):
            width = max(*(len(row[index]) for row in rows), *map(len, header.split()))
            table.add_column(header, justify="left" if index == 0 else "right", width=width)
        for row in rows:
            table.add_row(*row)
        tables.append(table)
    return tables


def _overrides(
    sets: list[str] | None, options: dict[str, str | int | bool | None]
) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for item in sets or []:
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise ConfigError(f"--set {item}: expected KEY=VALUE (e.g. workload.transfer_size=1m)")
        overrides[key.strip()] = value.strip()
    for name, given in options.items():
        if given is not None:
            overrides[name] = given
    return overrides


def run(
    nodes: Annotated[
        str | None,
        typer.Option(
            "--nodes",
            help="Hostfile (OpenMPI, MPICH or plain list), 'slurm', 'pbs' or 'local[:N]'. "
            "Default: the embedded local cluster.",
        ),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="Run config (TOML); lists make a sweep.")
    ] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option("--set", help="Set a config key: --set workload.transfer_size=1m."),
    ] = None,
    transfer_size: Annotated[
        str | None, typer.Option("--transfer-size", help="Bytes per I/O (IOR -t), e.g. 1m.")
    ] = None,
    block_size: Annotated[
        str | None, typer.Option("--block-size", help="Bytes per rank and segment (IOR -b).")
    ] = None,
    segments: Annotated[int | None, typer.Option("--segments", help="Segments (IOR -s).")] = None,
    tasks_per_node: Annotated[
        int | None, typer.Option("--tasks-per-node", help="Workload ranks per node.")
    ] = None,
    api: Annotated[
        str | None,
        typer.Option("--api", help="file-per-process (IOR -F) or shared (one file)."),
    ] = None,
    verify: Annotated[
        bool | None, typer.Option("--verify/--no-verify", help="Check the data read (IOR -R).")
    ] = None,
    repetitions: Annotated[
        int | None, typer.Option("--repetitions", help="Repetitions (IOR -i).")
    ] = None,
    label: Annotated[str | None, typer.Option("--label", help="Results directory label.")] = None,
    results_dir: Annotated[
        str | None, typer.Option("--results-dir", help="Where results directories go.")
    ] = None,
    transport: Annotated[str | None, typer.Option("--transport", help="auto, shm or tcp.")] = None,
    exclude_slow: Annotated[
        bool | None,
        typer.Option("--exclude-slow/--no-exclude-slow", help="Leave out nodes found slow."),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the summary as JSON on stdout; logs on stderr.")
    ] = False,
) -> None:
    """Start the daemons, run the IOR-style workload, stop everything, keep the results."""
    plan = load_config(config)
    overrides = _overrides(
        sets,
        {
            "workload.transfer_size": transfer_size,
            "workload.block_size": block_size,
            "workload.segments": None if segments is None else str(segments),
            "workload.tasks_per_node": None if tasks_per_node is None else str(tasks_per_node),
            "workload.api": api,
            "workload.verify": verify,
            "workload.repetitions": None if repetitions is None else str(repetitions),
            "output.label": label,
            "output.results_dir": results_dir,
            "cluster.transport": transport,
            "preflight.exclude_slow": exclude_slow,
        },
    )
    if overrides:
        plan = apply_overrides(plan, overrides)
    observer = ConsoleObserver()
    try:
        results = run_plan(
            plan, nodes_spec=nodes, command_line=["benchfs", *sys.argv[1:]], observer=observer
        )
    except (KeyboardInterrupt, Terminated) as error:
        signum = signal.SIGINT if isinstance(error, KeyboardInterrupt) else error.signum
        where = f"; partial results in {observer.run_dir}" if observer.run_dir else ""
        err_console.print(
            f"[bold red]interrupted[/]: everything stopped and removed{escape(where)}"
        )
        raise typer.Exit(128 + int(signum)) from None
    except Exception:
        if observer.run_dir is not None:
            err_console.print(
                f"results (failed run): {escape(str(observer.run_dir))}", highlight=False
            )
        raise
    _print_results(results, json_output)


def _print_results(results: list[PointResult], json_output: bool) -> None:
    if json_output:
        documents = [
            {**(result.summary or {}), "results_dir": str(result.run_dir), "notes": result.notes}
            for result in results
        ]
        typer.echo(json.dumps(documents[0] if len(documents) == 1 else documents, indent=2))
        for result in results:
            err_console.print(f"results: {escape(str(result.run_dir))}", highlight=False)
        return
    for result in results:
        if result.summary is not None:
            for table in phase_tables(result.summary):
                console.print(table)
        for note in result.notes:
            console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
        console.print(f"results: {escape(str(result.run_dir))}", highlight=False)
