"""`benchfs nodes`: which nodes keep being slow, since when and why, from the history."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from benchfs.cli.console import make_console, plain
from benchfs.cli.history import Cluster, ConfigFile, Json, ResultsDir, Since, Url, history_of, show
from benchfs.cli.tables import ColumnsOption, View, WideOption

console = make_console()
err_console = make_console(stderr=True)


def nodes(
    results_dir: ResultsDir = Path("results"),
    url: Url = None,
    config: ConfigFile = None,
    since: Since = None,
    cluster: Cluster = None,
    node: Annotated[
        str | None, typer.Option("--node", help="One node: its runs, one line each.")
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="With --node: write its page, with a plot over time."),
    ] = None,
    drain_hint: Annotated[
        bool,
        typer.Option(
            "--drain-hint",
            help="Print the scontrol lines that would drain the confirmed nodes (never run).",
        ),
    ] = False,
    exit_code: Annotated[
        bool,
        typer.Option(
            "--exit-code",
            help="Exit 1 when a confirmed (or intermittent) node is among --nodes.",
        ),
    ] = False,
    node_list: Annotated[
        str | None,
        typer.Option(
            "--nodes",
            help="With --exit-code: node names (a,b or Slurm's bnode[01-16]) or a hostfile.",
        ),
    ] = None,
    flagged_runs: Annotated[
        int | None,
        typer.Option("--flagged-runs", min=1, help="Confirmed: flagged in this many..."),
    ] = None,
    last_runs: Annotated[
        int | None, typer.Option("--last-runs", min=1, help="...of its last this many runs.")
    ] = None,
    json_output: Json = False,
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """Per node: runs seen and flagged, first and last flagged, the worst figure, and a
    status (new, confirmed, intermittent, recovered, healthy) with its reason."""
    from benchfs.config.model import HistoryConfig
    from benchfs.errors import ConfigError
    from benchfs.history.status import ACTED_ON, Rules, summarize
    from benchfs.history.views import (
        NODE_HEADERS,
        RUN_HEADERS,
        VERDICT_HEADERS,
        drain_hints,
        node_rows,
        reason_lines,
        run_reason_lines,
        run_rows,
        since_stamp,
    )

    if html is not None and node is None:
        raise ConfigError("--html writes one node's page: give --node NAME")
    if exit_code and node_list is None:
        raise ConfigError("--exit-code needs --nodes: the nodes a health check asks about")
    defaults = HistoryConfig()
    rules = Rules(flagged_runs or defaults.flagged_runs, last_runs or defaults.last_runs)
    if rules.flagged_runs > rules.last_runs:
        raise ConfigError(
            f"--flagged-runs {rules.flagged_runs} cannot exceed --last-runs {rules.last_runs}"
        )
    view = View.of(wide, columns)
    store = history_of(results_dir, url, config)
    after = since_stamp(since) if since else None
    runs = store.node_runs(cluster=cluster, since=after, node=node)
    summaries = summarize(runs, rules)
    if node is not None and not runs:
        raise ConfigError(f"--node {node}: not in the history {store.shown}")
    if drain_hint:
        for line in drain_hints(summaries):
            typer.echo(line)
    elif json_output:
        document = {
            "history": store.shown,
            "rules": {"flagged_runs": rules.flagged_runs, "last_runs": rules.last_runs},
            "nodes": [summary.to_json() for summary in summaries],
        }
        if node is not None:
            document["runs"] = [
                {"started_at": run.started_at, "run": run.label, "results_dir": run.results_dir,
                 "status": run.status, **run.row.__dict__}
                for run in runs
            ]  # fmt: skip
        typer.echo(json.dumps(document, indent=2, default=str))
    elif node is not None:
        (summary,) = summaries
        show(f"{summary.node}: its runs, oldest first", [*RUN_HEADERS, *VERDICT_HEADERS],
             run_rows(runs), view, wide=VERDICT_HEADERS)  # fmt: skip
        view.check()
        console.print(plain(f"{summary.node}: {summary.status}: {summary.reason}"), highlight=False)
        for line in run_reason_lines(runs):
            console.print(plain(line), highlight=False)
    elif not summaries:
        console.print(plain(f"no runs in {store.shown} yet"), highlight=False)
    else:
        several = len({summary.cluster for summary in summaries}) > 1
        title = f"{len(summaries)} nodes, worst first"
        show(title, [*NODE_HEADERS, *VERDICT_HEADERS], node_rows(summaries, with_cluster=several),
             view, wide=VERDICT_HEADERS)  # fmt: skip
        view.check()
        for line in reason_lines(summaries, with_cluster=several):
            console.print(plain(line), highlight=False)
        console.print(
            plain(f"confirmed: {rules.describe()}, the latest included; history: {store.shown}"),
            highlight=False,
        )
    if html is not None:
        from benchfs.history.page import write_node_page

        page = write_node_page(summaries[0], runs, html)
        err_console.print(plain(f"page: {page}"), highlight=False)
    if exit_code:
        assert node_list is not None
        asked = set(_names(node_list))
        bad = [s.node for s in summaries if s.node in asked and s.status in ACTED_ON and s.acted_on]
        if bad:
            err_console.print(plain(f"confirmed slow: {', '.join(bad)}"), highlight=False)
            raise typer.Exit(1)


def _names(spec: str) -> list[str]:
    """Node names: a hostfile, or a list (``a,b``, ``bnode[01-16]``)."""
    from benchfs.cluster.hostfile import parse_hostfile
    from benchfs.cluster.nodelist import expand_slurm_nodelist

    path = Path(spec)
    if path.is_file():
        return [host.name for host in parse_hostfile(path)]
    return expand_slurm_nodelist(spec)
