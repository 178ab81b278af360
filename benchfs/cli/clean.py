"""`benchfs clean`: remove what runs whose orchestrator died left on this machine."""

from __future__ import annotations

import typer

from benchfs.cli.console import make_console, plain


def clean() -> None:
    """Stop the processes, remove the data, registry, scratch and shared-memory
    files of this user's runs whose `benchfs run` is gone (killed, crashed),
    and mark their manifests aborted (and so in the history). Runs still going are
    left alone."""
    from benchfs.run.leftovers import clean_dead_runs

    console = make_console()
    cleaned = clean_dead_runs()
    for run in cleaned:
        console.print(plain(run.describe()), soft_wrap=True)
        for line in [*run.hosts, *run.history]:
            console.print(f"  {plain(line)}", soft_wrap=True)
        for problem in run.problems:
            console.print(f"  {plain(problem)}", soft_wrap=True)
    if not cleaned:
        console.print("nothing to clean: no run of yours died here without cleaning up")
    if any(run.problems for run in cleaned):
        raise typer.Exit(1)
