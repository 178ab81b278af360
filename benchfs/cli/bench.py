"""`benchfs bench ...`: side-by-side benchmarks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from benchfs.bench.storage import StorageBenchReport, run_storage_bench, standard_cases
from benchfs.config.sizes import format_size, parse_size

app = typer.Typer(help="Side-by-side benchmarks: the engine against a reference tool.")
console = Console()
err_console = Console(stderr=True)


def _size(text: str, option: str) -> int:
    try:
        return parse_size(text)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint=option) from None


@app.command("storage")
def storage(
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir", help="Directory on the file system to measure (default: the temp dir)."
        ),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    seq_size: Annotated[
        str, typer.Option(help="Bytes per sequential case (e.g. 4GiB, 512m).")
    ] = "4GiB",
    rand_size: Annotated[str, typer.Option(help="Bytes per random 4 KiB case.")] = "1GiB",
    queue_depth: Annotated[int, typer.Option(min=1, max=1024, help="Operations in flight.")] = 32,
    rounds: Annotated[
        int, typer.Option(min=1, help="Alternating engine/fio rounds per case; medians are shown.")
    ] = 3,
    trace_repeats: Annotated[
        int,
        typer.Option(min=0, help="On/off pairs for the event log overhead (0 to skip)."),
    ] = 3,
) -> None:
    """Run the engine and fio (io_uring, direct) on the same four cases and compare."""
    cases = standard_cases(
        _size(seq_size, "--seq-size"), _size(rand_size, "--rand-size"), queue_depth
    )
    progress = err_console.status("starting")
    with progress:
        report = run_storage_bench(
            directory,
            cases,
            rounds=rounds,
            trace_repeats=trace_repeats,
            on_progress=lambda step: progress.update(step),
        )
    if json_output:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        console.print(_table(report, cases[0].total_bytes, cases[-1].total_bytes))


def _table(report: StorageBenchReport, seq_bytes: int, rand_bytes: int) -> Table:
    """Two rows a case, engine over fio, so it stays readable in 80 columns."""
    table = Table(
        box=box.SIMPLE_HEAD,
        title=f"engine vs fio on {report.directory} "
        f"(sequential {format_size(seq_bytes)}, random {format_size(rand_bytes)})",
    )
    table.add_column("case", no_wrap=True)
    table.add_column("tool", no_wrap=True)
    for header in ("MiB/s", "IOPS", "p50 ms", "p99 ms", "ratio", "io_depth"):
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
    for case in report.cases:
        for tool, side in (("engine", case.engine), ("fio", case.fio)):
            engine_row = tool == "engine"
            table.add_row(
                case.name if engine_row else "",
                tool,
                f"{side.MiBps:,.0f}",
                f"{side.iops:,.0f}",
                f"{side.p50_us / 1000:.2f}",
                f"{side.p99_us / 1000:.2f}",
                f"{case.ratio:.2f}" if engine_row else "",
                f"{case.io_depth_mean:.1f}" if engine_row else "",
                end_section=not engine_row,
            )
    if report.trace_overhead_ratio is not None:
        table.caption = f"event log on/off throughput: {report.trace_overhead_ratio:.3f}"
    return table


@app.command("analysis")
def analysis(
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    events: Annotated[int, typer.Option(min=1000, help="Trace events to generate.")] = 10_000_000,
) -> None:
    """Time loading 10 million trace events and writing the full report; peak memory."""
    from benchfs.bench.analysis import run_analysis_bench

    with err_console.status(f"generating {events:,} events, then loading and reporting"):
        result = run_analysis_bench(events)
    if json_output:
        typer.echo(json.dumps(result.to_json(), indent=2))
        return
    verdict = "within" if result.within_targets else "OUTSIDE"
    console.print(
        f"{result.events:,} events ({result.trace_bytes / 2**20:,.0f} MiB of traces): "
        f"load {result.load_s:.2f} s + report {result.report_s:.2f} s = {result.total_s:.2f} s "
        f"({result.cpu_s:.2f} s CPU), "
        f"peak RSS {result.peak_rss_bytes / 2**30:.2f} GiB; {verdict} the targets "
        f"({result.target_s:g} s, {result.target_peak_bytes / 2**30:g} GiB)"
    )
