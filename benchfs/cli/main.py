"""Entry point of the ``benchfs`` command.

Commands live in one module each and only parse options, call library code
and print; errors become one line on stderr and a non-zero exit code. A
command stopped by SIGINT, SIGTERM or SIGHUP has cleaned up on the way out
(its ``Lifecycle``) and exits 128 + the signal's number.
"""

from __future__ import annotations

import signal
import sys
import traceback
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from analysis.errors import AnalysisError
from benchfs import __version__
from benchfs.cli import analyze, bench, clean, daemon, diagnose, history, mount, nodes, phases, run
from benchfs.cli.console import make_console, plain
from benchfs.cluster.lifecycle import Lifecycle, Terminated
from benchfs.errors import BenchfsError


class _Commands(TyperGroup):
    """A command runs in a scope of its own, so that SIGTERM and SIGHUP end it
    as Ctrl-C does wherever they come: also before its first resources are
    taken (while a tool is probed) and between its scopes. Ctrl-C unwinds as
    ``Terminated(SIGINT)``, past Typer's own handling, so that ``main`` ends
    every command stopped by a signal alike."""

    def invoke(self, ctx: Any) -> Any:  # typer's own click Context
        try:
            with Lifecycle():
                return super().invoke(ctx)
        except KeyboardInterrupt:
            raise Terminated(signal.SIGINT) from None


app = typer.Typer(
    cls=_Commands,
    name="benchfs",
    help="Deploy, benchmark and diagnose a job-temporary distributed file system.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(bench.app, name="bench")
app.add_typer(analyze.app, name="analyze")
app.add_typer(history.app, name="history")
app.command("nodes")(nodes.nodes)
analyze.app.command("phases")(phases.phases)
app.command("report")(analyze.report)
app.command("compare")(analyze.compare)
app.command("diagnose")(diagnose.diagnose)
app.command("run")(run.run)
app.command("daemon")(daemon.daemon)
app.command("clean")(clean.clean)
app.command("mount")(mount.mount)
app.command("umount")(mount.umount)

_state = {"verbose": False}
err_console = make_console(stderr=True)


def _version_text() -> str:
    import benchfs_native

    info = benchfs_native.build_info()
    return (
        f"benchfs {__version__} (engine {info['version']}, {info['profile']} build, "
        f"git {info['git_revision']}, {info['rustc']}, UCX {info['ucx']})"
    )


def _print_version(value: bool) -> None:
    if value:
        typer.echo(_version_text())
        raise typer.Exit()


@app.callback()
def root(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show tracebacks and debug logs.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and native build info, then exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """BenchFS command line."""
    _state["verbose"] = verbose


def main() -> None:
    """Run the CLI; turn expected errors into one line and an exit code."""
    try:
        _run()
    except KeyboardInterrupt:
        # Ctrl-C after the command's scope has ended, while its last line is
        # printed: everything it started was already stopped and removed.
        sys.exit(128 + signal.SIGINT)


def _run() -> None:
    try:
        app()
    except (BenchfsError, AnalysisError, OSError, ValueError) as error:
        if _state["verbose"]:
            raise
        code = error.exit_code if isinstance(error, BenchfsError | AnalysisError) else 2
        err_console.print(f"[bold red]error:[/] {plain(error)}", highlight=False, soft_wrap=True)
        sys.exit(code)
    except Terminated as stop:
        if _state["verbose"]:
            traceback.print_exc()
        name = signal.Signals(stop.signum).name
        ended = (
            f"cleanup failed: {'; '.join(stop.left)}"
            if stop.left
            else "everything it started was stopped and removed"
        )
        err_console.print(
            f"[bold red]interrupted[/] by {name}: {plain(ended)}", highlight=False, soft_wrap=True
        )
        sys.exit(128 + stop.signum)
