"""`benchfs analyze ...`, `benchfs report` and `benchfs compare`: thin commands over analysis/.

The tables are the report's own statistics (``analysis.stats.overview``),
computed once there and only shown here. analysis/ pulls in pandas and
matplotlib; it is imported inside the commands so that every other command
starts without that cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from benchfs.cli.console import make_console, plain
from benchfs.cli.tables import ColumnsOption, Grid, View, WideOption, print_grid

if TYPE_CHECKING:
    import pandas as pd

    from analysis.loaders.traces import TraceSet
    from analysis.stats.overview import Part, TraceStats

SLOW_MS = 100.0  # the default of analysis.stats.nodes.SLOW_MS
# Columns of the per-node latency table shown with --wide only.
NODE_DETAIL = ("p50_ms", "max_ms", "read_ops", "write_ops")

app = typer.Typer(help="Statistics of loose engine trace files (*.bftrace or directories).")
console = make_console()
err_console = make_console(stderr=True)

FilesArgument = Annotated[
    list[Path], typer.Argument(help="Trace files, or directories searched for *.bftrace.")
]
AllowPartial = Annotated[
    bool,
    typer.Option(
        "--allow-partial", help="Use the readable part of damaged files and report what was lost."
    ),
]
ByNode = Annotated[bool, typer.Option("--by-node", help="One row per node as well.")]
Csv = Annotated[bool, typer.Option("--csv", help="Print CSV on stdout instead of tables.")]


def _load(files: list[Path], allow_partial: bool) -> TraceSet:
    from analysis.loaders.traces import load_traces

    traces = load_traces(files, allow_partial=allow_partial)
    for loss in traces.losses:
        err_console.print(
            f"[yellow]warning:[/] {plain(loss.describe())}", highlight=False, soft_wrap=True
        )
    return traces


def _show(
    frame: pd.DataFrame,
    title: str,
    csv: bool,
    view: View | None = None,
    *,
    keys: int = 1,
    wide: Sequence[str] = (),
    texts: Sequence[str] = (),
    transpose: bool = False,
    lift_constant: bool = False,
) -> None:
    """``frame`` as CSV or as tables that fit the terminal (``benchfs.cli.tables``);
    ``wide`` and ``texts`` name the frame's columns that wait for --wide and that
    hold words."""
    from analysis.reports.columns import display_frame, header

    if csv:
        typer.echo(f"# {title}")
        typer.echo(frame.to_csv(index=False), nl=False)
        return
    headers, *rows = display_frame(frame)
    grid = Grid.of(title, headers, rows, keys=keys, transpose=transpose,
                   lift_constant=lift_constant, wide=[header(c) for c in wide],
                   texts=[header(c) for c in texts])  # fmt: skip
    print_grid(console, grid, view)


def _stats(
    files: list[Path],
    allow_partial: bool,
    kinds: tuple[str, ...],
    part: Part,
    *,
    slow_ms: float = SLOW_MS,
    bucket_s: float = 10.0,
) -> TraceStats:
    """The statistics of one part, as the report computes them (``analysis.stats.overview``);
    traces with none of ``kinds`` are an error naming the kinds present."""
    from analysis.stats.overview import trace_stats

    traces = _load(files, allow_partial)
    if not any(traces.has(kind) for kind in kinds):
        traces.kind(kinds[0])  # raises, naming the kinds that are present
    return trace_stats(traces, parts=(part,), slow_ms=slow_ms, bucket_s=bucket_s)


def _warn(lines: list[str], label: str = "warning") -> None:
    for line in lines:
        err_console.print(f"[yellow]{label}:[/] {plain(line)}", highlight=False, soft_wrap=True)


@app.command("io-depth")
def io_depth_command(
    files: FilesArgument,
    by_node: ByNode = False,
    csv: Csv = False,
    allow_partial: AllowPartial = False,
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """io_depth (SQEs per io_uring submit): summary, histogram, and per node."""
    import pandas as pd

    view = View.of(wide, columns)
    stats = _stats(files, allow_partial, ("submit",), "io_depth")
    assert stats.io_depth is not None and stats.io_depth_histogram is not None
    summary = pd.DataFrame(stats.io_depth.rows(), columns=["metric", "value"])
    _show(summary, "io_depth", csv, view)
    _show(stats.io_depth_histogram, "submits per io_depth bucket", csv, view)
    if by_node and stats.io_depth_by_node is not None:
        _show(stats.io_depth_by_node, "io_depth per node", csv, view)
    _warn([stats.io_depth_warning] if stats.io_depth_warning else [])
    view.check()


@app.command("latency")
def latency_command(
    files: FilesArgument,
    by_node: ByNode = False,
    csv: Csv = False,
    allow_partial: AllowPartial = False,
    slow_ms: Annotated[
        float, typer.Option(min=0, help="An op slower than this (ms) counts as slow.")
    ] = SLOW_MS,
    bucket_s: Annotated[
        float, typer.Option(min=0.001, help="Width of the time buckets (s) with --by-node.")
    ] = 10.0,
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """I/O latency per operation: percentiles, buckets; per node and over time with --by-node."""
    view = View.of(wide, columns)
    stats = _stats(
        files, allow_partial, ("storage_op",), "storage", slow_ms=slow_ms, bucket_s=bucket_s
    )
    assert stats.latency_by_op is not None and stats.latency_buckets is not None
    _show(stats.latency_by_op, "storage op latency per operation", csv, view,
          wide=("p95_ms", "errors"))  # fmt: skip
    _show(stats.latency_buckets, "share of ops per latency bucket", csv, view)
    _warn(stats.latency_hints, "hint")
    if by_node:
        assert stats.node_table is not None and stats.persistence is not None
        _show(stats.node_table, f"per node (slow = over {slow_ms:g} ms), worst first", csv, view,
              wide=NODE_DETAIL)  # fmt: skip
        _show(stats.persistence, f"slow ops over time ({bucket_s:g} s buckets)", csv, view)
    view.check()


@app.command("rpc")
def rpc_command(
    files: FilesArgument,
    csv: Csv = False,
    allow_partial: AllowPartial = False,
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """RPC time per phase, retries, in-flight RPCs, and load per target node with its imbalance."""
    import pandas as pd

    view = View.of(wide, columns)
    stats = _stats(files, allow_partial, ("rpc_client", "rpc_server"), "rpc")
    assert stats.rpc_phases is not None
    _show(stats.rpc_phases, "RPC time per phase", csv, view, wide=("p90_ms",))
    if stats.rpc_retries is None or stats.rpc_load is None or stats.rpc_in_flight is None:
        view.check()
        return  # server events only
    failures = ", ".join(stats.rpc_retries.failures) or "none"
    retries = {**vars(stats.rpc_retries), "failures": failures}
    _show(pd.DataFrame([retries]), "RPC retries and failures", csv, view, keys=0,
          texts=("failures",), transpose=True)  # fmt: skip
    _show(stats.rpc_in_flight, "RPCs in flight per client process", csv, view)
    _show(stats.rpc_load, "load per target node", csv, view, wide=("bytes",))
    balance = pd.DataFrame(
        [
            {"quantity": name, **vars(imbalance)}
            for name, imbalance in (
                ("requests", stats.rpc_request_imbalance),
                ("bytes", stats.rpc_bytes_imbalance),
            )
        ]
    )
    _show(balance, "imbalance across targets (max/mean, coefficient of variation)", csv, view)
    view.check()


def report(
    run_dir: Annotated[
        Path,
        typer.Argument(
            help="A results directory of one run, or a directory of IOR/mdtest/fio outputs."
        ),
    ],
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the report here instead of RUN_DIR.")
    ] = None,
    allow_partial: AllowPartial = False,
) -> None:
    """Write report.md, report.html and plots/ for a run (or a directory of tool outputs)."""
    from analysis.reports.write import write_run_report
    from analysis.sources.results import load_results

    run = load_results(run_dir, allow_partial=allow_partial)
    for note in run.notes:
        err_console.print(f"[yellow]warning:[/] {plain(note)}", highlight=False, soft_wrap=True)
    files = write_run_report(run, out or run.path)
    console.print(plain(f"wrote {files.markdown}, {files.html} and {len(files.plots)} plots"))


def compare(
    run_a: Annotated[
        Path,
        typer.Argument(help="The baseline results directory, or a directory of a sweep's (A)."),
    ],
    run_b: Annotated[
        Path, typer.Argument(help="The results directory, or sweep directory, to compare (B).")
    ],
    csv: Csv = False,
    json_output: Annotated[
        bool,
        typer.Option("--json", help="Print JSON: every row's interval, p-value, test, verdict."),
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Also write compare.md, compare.html and plots/ here."),
    ] = None,
    confidence: Annotated[
        float, typer.Option(min=0.5, max=0.999, help="Confidence of the intervals and tests.")
    ] = 0.95,
    allow_partial: AllowPartial = False,
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """Change from A to B per phase and metric, whether it is beyond run-to-run noise
    (from the repetitions), and the configuration differences."""
    import json

    from analysis.compare import Method, compare_runs, compare_sets, comparison_json
    from analysis.errors import MissingDataError
    from analysis.reports.comparison import (
        ONE_VALUE_CAPTION,
        comparison_table,
        one_value_table,
        verdict_lines,
        write_comparison_report,
    )
    from analysis.sources.results import is_results_dir, load_results
    from analysis.sources.run_set import is_run_set, load_run_set

    method = Method(confidence=confidence)
    if is_run_set(run_a) and is_run_set(run_b):
        comparison = compare_sets(
            load_run_set(run_a, allow_partial=allow_partial),
            load_run_set(run_b, allow_partial=allow_partial),
            method=method,
        )
        label_a, label_b = run_a.name, run_b.name
    elif is_run_set(run_a) or is_run_set(run_b):
        sweep, other = (run_a, run_b) if is_run_set(run_a) else (run_b, run_a)
        if not is_results_dir(other):
            load_run_set(other)  # names what ``other`` lacks: it is no run either
        raise MissingDataError(
            f"{other} is one results directory but {sweep} is not: compare a run with a run, "
            "or a sweep's directory with a sweep's directory"
        )
    else:
        # A results directory or a directory of tool outputs on each side.
        a = load_results(run_a, allow_partial=allow_partial)
        b = load_results(run_b, allow_partial=allow_partial)
        comparison = compare_runs(a, b, method=method)
        # Runs of one setup share their label: their directory names tell them apart.
        label_a, label_b = (a.label, b.label) if a.label != b.label else (a.path.name, b.path.name)
    if out is not None:
        files = write_comparison_report(comparison, label_a, label_b, out)
        err_console.print(
            plain(f"wrote {files.markdown}, {files.html} and {len(files.plots)} plots")
        )
    if json_output:
        document = {
            "A": {"label": label_a, "path": str(run_a)},
            "B": {"label": label_b, "path": str(run_b)},
            **comparison_json(comparison),
        }
        typer.echo(json.dumps(document, indent=2))
        return
    view = View.of(wide, columns)
    title = f"{label_a} (A) -> {label_b} (B)"
    if csv:
        _show(comparison.metrics, title, csv)
    else:
        table = comparison_table(comparison)
        keys = 3 if "point" in table.columns else 2
        # The interval, p and the repetitions back the verdict: with --wide. A verdict
        # that holds for every row (no noise estimate with 1 repetition) is said once.
        detail = [c for c in table.columns if "CI" in c or c in ("p", "reps A/B", "reps_needed")]
        _show(table, title, csv, view, keys=keys, wide=detail, texts=("verdict",),
              lift_constant=True)  # fmt: skip
        once = one_value_table(comparison)
        if not once.empty:
            _show(once, ONE_VALUE_CAPTION, csv, view, keys=keys)
        for line in verdict_lines(comparison):
            console.print(f"- {plain(line)}", highlight=False)
        for line in comparison.method.describe():
            console.print(f"[dim]{plain(line)}[/]", highlight=False)
    if comparison.config_diff.empty:
        if not csv:
            console.print("effective configurations are identical")
    else:
        _show(comparison.config_diff, "configuration differences", csv, view)
    if not csv:
        view.check()
