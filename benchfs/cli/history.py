"""`benchfs history`: a workload's figure over time, marked where it changed beyond
the noise; `benchfs history import`: results directories into the history."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from benchfs.cli.console import make_console, plain
from benchfs.cli.tables import ColumnsOption, Grid, View, WideOption, print_grid

if TYPE_CHECKING:  # the store pulls in SQLAlchemy: imported when a command runs
    from benchfs.history.store import History

console = make_console()
err_console = make_console(stderr=True)

app = typer.Typer(
    help="The results database: trends of a workload over time, and `import`.",
    invoke_without_command=True,
    no_args_is_help=False,
)

ResultsDir = Annotated[
    Path,
    typer.Option(
        "--results-dir", help="The results root whose history.sqlite to use (unless --url)."
    ),
]
Url = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="The history: a SQLite file or postgresql://USER@HOST/DB (history.url).",
    ),
]
ConfigFile = Annotated[
    Path | None,
    typer.Option("--config", help="A run config whose history section and results_dir to use."),
]
Since = Annotated[
    str | None,
    typer.Option("--since", help="Only runs since a date or time (2026-12-01) or an age (7d)."),
]
Cluster = Annotated[
    str | None, typer.Option("--cluster", help="Only this cluster's runs (history.cluster).")
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of tables.")]


def history_of(results_dir: Path, url: str | None, config: Path | None) -> History:
    """The history a command names: --url, else --config's, else under --results-dir."""
    from benchfs.config.model import HistoryConfig
    from benchfs.config.plan import load_config
    from benchfs.history.record import open_history

    settings = HistoryConfig()
    root: str | Path = results_dir
    if config is not None:
        base = load_config(config).base
        settings, root = base.history, base.output.results_dir
        if results_dir != Path("results"):
            root = results_dir
    if url is not None:
        settings = settings.model_copy(update={"url": url})
    return open_history(root, settings)


def show(
    title: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    view: View,
    *,
    wide: Sequence[str] = (),
    texts: Sequence[str] = (),
) -> None:
    """A table that fits the terminal (``benchfs.cli.tables``); the first column
    names rows, those in ``wide`` wait for --wide or --columns."""
    print_grid(console, Grid.of(title, headers, rows, wide=wide, texts=texts), view)


@app.callback()
def history(
    ctx: typer.Context,
    results_dir: ResultsDir = Path("results"),
    url: Url = None,
    config: ConfigFile = None,
    since: Since = None,
    cluster: Cluster = None,
    metric: Annotated[
        str,
        typer.Option(
            "--metric", help="The per-repetition figure: bwMiB, iops, p99_us, wrRdTime, ..."
        ),
    ] = "bwMiB",
    json_output: Json = False,
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """Per workload (target, pattern, sizes, node count), each run's figure with the noise
    of its repetitions; a change is marked only where it is beyond that noise."""
    if ctx.invoked_subcommand is not None:
        return
    from benchfs.history.trends import trends, unit
    from benchfs.history.views import TREND_HEADERS, TREND_WIDE, since_stamp, trend_rows

    store = history_of(results_dir, url, config)
    after = since_stamp(since) if since else None
    runs = store.runs_with_ids(cluster=cluster, since=after)
    found = trends(
        runs,
        store.figures([run_id for run_id, _ in runs]),
        store.node_runs(cluster=cluster, since=after),
        metric=metric,
    )
    if json_output:
        typer.echo(json.dumps([trend.to_json() for trend in found], indent=2))
        return
    if not found:
        console.print(plain(f"no runs with {metric} figures in {store.shown}"), highlight=False)
        return
    view = View.of(wide, columns)
    for trend in found:
        headers = [f"mean {unit(metric)}".strip() if h == "mean" else h for h in TREND_HEADERS]
        title = f"{trend.cluster}: {trend.workload_key} ({trend.runs} runs, {metric})"
        show(title, [*headers, *TREND_WIDE], trend_rows(trend), view, wide=TREND_WIDE,
             texts=("flagged",))  # fmt: skip
    view.check()
    console.print(
        "change: against the previous run of the same workload; 'changed' only beyond the "
        "noise of both runs' repetitions (the test of `benchfs compare`), 'no estimate' "
        "where a run has one repetition; flagged: the nodes flagged in that run",
        highlight=False,
        markup=False,
    )


@app.command("import")
def import_dirs(
    directories: Annotated[
        list[Path],
        typer.Argument(help="Results directories, or roots holding them (and diagnose outputs)."),
    ],
    results_dir: ResultsDir = Path("results"),
    url: Url = None,
    config: ConfigFile = None,
) -> None:
    """Record existing results directories in the history; importing again changes nothing.

    Exit code 0 when every directory was recorded, 1 when some could not be.
    """
    from benchfs.history.importer import import_paths

    store = history_of(results_dir, url, config)
    done = import_paths(store, directories)
    for line in done.problems:
        err_console.print(plain(line), highlight=False)
    console.print(
        plain(
            f"{done.recorded} runs recorded in {store.shown} ({done.nodes} node rows)"
            + (f"; {len(done.problems)} not" if done.problems else "")
        ),
        highlight=False,
    )
    raise typer.Exit(1 if done.problems else 0)
