"""`benchfs diagnose`: a storage health report for a directory on one node or on every node."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from benchfs.cli.console import make_console, plain
from benchfs.cli.tables import NAME, TEXT, Column, ColumnsOption, Grid, View, WideOption, print_grid
from benchfs.cluster.hostfile import resolve_nodes
from benchfs.cluster.lifecycle import Lifecycle
from benchfs.cluster.private import private_umask
from benchfs.health.thresholds import load_thresholds
from benchfs.launchers import get_launcher
from benchfs.launchers.select import launcher_name_in

if TYPE_CHECKING:  # the measuring modules pull in pandas: imported when the command runs
    from benchfs.health.diagnose import DiagnoseReport
    from benchfs.health.model import Finding

console = make_console()
err_console = make_console(stderr=True)
_TEMP_DIR = Path(tempfile.gettempdir())
DEFAULT_RESULTS = Path("results")  # benchfs run's output.results_dir
_STATUS_STYLE = {"healthy": "bold green", "degraded": "bold yellow", "error": "bold red"}


def diagnose(
    nodes: Annotated[
        str | None,
        typer.Option(
            "--nodes",
            help="Hostfile (OpenMPI, MPICH or plain list), 'slurm', 'pbs' or 'local:N'. "
            "Without it, only this node is diagnosed.",
        ),
    ] = None,
    directory: Annotated[
        Path,
        typer.Option(
            "--dir",
            help="Directory to test (on every node). With the local launcher each node "
            "uses <dir>/<node>.",
        ),
    ] = _TEMP_DIR,
    quick: Annotated[
        bool, typer.Option("--quick", help="Short runs: within 30 s per node.")
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the JSON report on stdout instead of a table.")
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option("--output", help="Write diagnose.md, diagnose.json and raw tool output here."),
    ] = None,
    thresholds_file: Annotated[
        Path | None,
        typer.Option("--thresholds", help="TOML file overriding thresholds (docs/DIAGNOSE.md)."),
    ] = None,
    launcher_name: Annotated[
        str | None,
        typer.Option(
            "--launcher",
            help="How to start work on the nodes: local, mpirun or srun "
            "(default: local for local nodes, srun inside Slurm, else mpirun).",
        ),
    ] = None,
    deadline: Annotated[
        float | None,
        typer.Option(
            "--deadline", min=1, help="Seconds each node may take (default 60 quick, 600 full)."
        ),
    ] = None,
    wide: WideOption = False,
    columns: ColumnsOption = None,
    results_dir: Annotated[
        Path | None,
        typer.Option(
            "--results-dir",
            help="The results root whose history records the nodes (default: ./results, "
            "when it exists).",
        ),
    ] = None,
    history_url: Annotated[
        str | None,
        typer.Option("--history-url", help="The history instead: a file or postgresql://..."),
    ] = None,
    history: Annotated[
        bool,
        typer.Option("--history/--no-history", help="Record the nodes in the history."),
    ] = True,
) -> None:
    """Measure the storage behind a directory and say plainly whether it is healthy.

    Exit code 0 healthy, 1 degraded, 2 could not run (on any node).
    """
    from benchfs.health.diagnose import diagnose_cluster, diagnose_local
    from benchfs.health.report import to_json, write_reports

    private_umask()  # the reports and raw figures under --output: this user's only
    thresholds = load_thresholds(thresholds_file)
    raw_dir = output / "raw" if output else None
    # SIGTERM and SIGHUP unwind too: fio, iostat and the workers stop, test files go.
    if nodes is None:
        with Lifecycle(), _progress(json_output, f"diagnosing {directory}"):
            report = diagnose_local(directory, quick=quick, thresholds=thresholds, raw_dir=raw_dir)
    else:
        hosts = resolve_nodes(nodes)
        launcher = get_launcher(launcher_name or launcher_name_in(nodes, os.environ))
        with Lifecycle(), _progress(json_output, f"diagnosing {directory} on {len(hosts)} nodes"):
            report = diagnose_cluster(
                hosts,
                launcher,
                directory,
                quick=quick,
                thresholds=thresholds,
                deadline_s=deadline,
                raw_dir=raw_dir / "nodes" if raw_dir else None,
            )
    if output is not None:
        markdown, document = write_reports(report, output)
        if not json_output:
            err_console.print(plain(f"report: {markdown} and {document}"), highlight=False)
    if json_output:
        typer.echo(to_json(report))
    else:
        view = View.of(wide, columns)
        _print_summary(report, view)
        view.check()
    # Into the history of the results root: one named, or ./results where runs already are.
    root = results_dir or DEFAULT_RESULTS
    if history and (results_dir is not None or history_url is not None or root.is_dir()):
        line = _record(report, root, history_url, output)
        err_console.print(plain(line), highlight=False, soft_wrap=True)
    raise typer.Exit(report.exit_code)


def _record(report: DiagnoseReport, results_dir: Path, url: str | None, output: Path | None) -> str:
    """Every node measured, into the history; the line that says where (or why not)."""
    from benchfs.config.model import HistoryConfig
    from benchfs.history.consult import cluster_name
    from benchfs.history.diagnose_rows import diagnose_record
    from benchfs.history.record import record_safely

    settings = HistoryConfig(url=url)
    return record_safely(
        results_dir,
        settings,
        lambda: diagnose_record(
            report.document(),
            cluster=cluster_name(settings),
            command=" ".join(["benchfs", *sys.argv[1:]]),
            results_dir=str(output.resolve()) if output is not None else "",
        ),
    )


class _progress:
    """A spinner on stderr unless the output is JSON for a machine."""

    def __init__(self, quiet: bool, text: str) -> None:
        self._status = None if quiet else err_console.status(text)

    def __enter__(self) -> None:
        if self._status is not None:
            self._status.__enter__()

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.__exit__(None, None, None)


# Columns of words; the others hold figures.
_WORDS = ("node", "status", "verdict")


def _grid(headers: Sequence[str], rows: list[list[str]], text: Sequence[str]) -> Grid:
    """The ``text`` columns wrap between words in what the figures leave of the
    terminal; every figure stays whole (``benchfs.cli.tables``)."""
    columns = [
        Column(header, TEXT if header in text else NAME if header in _WORDS else "infer", i == 0)
        for i, header in enumerate(headers)
    ]
    return Grid("", columns, [list(row) for row in rows])


def _print_summary(report: DiagnoseReport, view: View) -> None:
    from benchfs.health.report import NODE_COLUMNS, TERMINAL_HEADERS, node_row, terminal_row

    style = _STATUS_STYLE.get(report.status, "bold")
    console.print(
        f"[{style}]{report.status.upper()}[/] storage under {plain(report.directory)} "
        f"({len(report.nodes)} node(s), {'quick' if report.quick else 'full'} run)",
        highlight=False,
    )
    by_node = {assessment.node: assessment for assessment in report.assessments}
    if len(report.nodes) > 1:
        headers = ("node", "status", *(c.header for c in NODE_COLUMNS), "flagged")
        rows = [node_row(node, by_node[node.node], short=True) for node in report.nodes]
        print_grid(console, _grid(headers, rows, text=("flagged",)), view)
        for assessment in report.assessments:
            node_error = next(n.error for n in report.nodes if n.node == assessment.node)
            if node_error:
                console.print(f"{assessment.node}: could not run: {node_error}", markup=False)
            elif assessment.problems:
                console.print(f"{assessment.node}:", highlight=False, markup=False)
                _print_findings(assessment.problems, indent="  ")
        if report.policy is not None:
            excluded = ", ".join(report.policy.excluded) or "none"
            console.print(f"a preflight would exclude: {plain(excluded)}", highlight=False)
        return
    node = report.nodes[0]
    if node.error:
        console.print(f"[bold red]could not run:[/] {plain(node.error)}", highlight=False)
        return
    if node.filesystem_text:
        console.print(node.filesystem_text, highlight=False, markup=False)
    rows = [terminal_row(test, by_node[node.node]) for test in node.tests]
    print_grid(console, _grid(TERMINAL_HEADERS, rows, text=("test",)), view)
    _print_findings(by_node[node.node].problems)


def _print_findings(problems: list[Finding], indent: str = "") -> None:
    """Degraded findings in full; warnings only counted, to stay on one screen."""
    warnings = [finding for finding in problems if finding.level == "warn"]
    for finding in problems:
        if finding.level == "degraded":
            where = f"{finding.test}: " if finding.test else ""
            console.print(
                f"{indent}degraded: {where}{finding.message}", highlight=False, markup=False
            )
    if warnings:
        labels = ", ".join(dict.fromkeys(finding.label() for finding in warnings))
        console.print(
            f"{indent}{len(warnings)} warning(s): {labels} (details: --output or --json)",
            highlight=False,
            markup=False,
        )
