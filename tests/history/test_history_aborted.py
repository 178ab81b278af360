"""A run whose orchestrator died writes no history itself: the clean that marks
it aborted (`benchfs clean`, or the next run's sweep) records it, in the history
the run named, and an aborted run without figures does not make a node look
recovered. (tests/run/test_run_orphans.py kills real runs for the same.)"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from damaged import KINDS, REASONS, damaged, record

from benchfs.cluster.hostfile import Host
from benchfs.config.model import RunConfig
from benchfs.config.plan import effective_config
from benchfs.history.model import NodeRow
from benchfs.history.status import summarize
from benchfs.history.store import History, Location
from benchfs.results.manifest import ManifestRecorder, load_manifest, new_manifest
from benchfs.results.rundir import create_run_dir
from benchfs.run.leftovers import RunRecord, clean_run, process_start_ticks

CLUSTER = "aborted-test"
NODES = [Host("local0", 1), Host("local1", 1)]


def dead_orchestrator() -> tuple[int, int]:
    """The pid and start time of a process that has ended."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    ticks = process_start_ticks(process.pid)
    assert ticks is not None
    assert process.stdin is not None
    process.stdin.close()
    process.wait(timeout=60)
    return process.pid, ticks


def left_running(results: Path, **history: object) -> Path:
    """A results directory whose manifest says running, as a killed run leaves it."""
    config = RunConfig.model_validate(
        {"output": {"results_dir": str(results), "label": "killed"},
         "history": {"cluster": CLUSTER, **history}}
    )  # fmt: skip
    run_dir = create_run_dir(results, "killed")
    ManifestRecorder(
        run_dir,
        new_manifest(
            label="killed", command_line=["benchfs", "run"],
            effective_config=effective_config(config), hosts_given=NODES, hosts_used=NODES,
        ),
    )  # fmt: skip
    return run_dir


def clean(run_dir: Path) -> list[str]:
    pid, ticks = dead_orchestrator()
    token = f"{os.getpid()}-{secrets.token_hex(3)}"
    cleaned = clean_run(
        RunRecord(token=token, pid=pid, start_ticks=ticks, host=socket.gethostname(),
                  run_dirs=[str(run_dir)])
    )  # fmt: skip
    assert cleaned.aborted == [str(run_dir)] and not cleaned.problems, cleaned
    assert load_manifest(run_dir).status == "aborted"
    return cleaned.history


def test_the_clean_records_the_aborted_run_in_its_history(tmp_path: Path) -> None:
    results = tmp_path / "results"
    store = History(Location(path=results / "history.sqlite"))
    # local1 flagged in the two runs before: confirmed.
    for index in range(2):
        base = record(uid=f"before{index}", started=f"2026-01-0{index + 1}T10:00:00Z")
        rows = [NodeRow(node="local0", role="used", flagged=False),
                NodeRow(node="local1", role="used", flagged=True, metric="r_await", value=90.0,
                        typical=1.0, unit="ms", reason="r_await 90 ms vs 1 ms")]  # fmt: skip
        store.write(replace(base, run=replace(base.run, cluster=CLUSTER), nodes=rows))
    run_dir = left_running(results)

    assert clean(run_dir) == [f"history: aborted run recorded in {results / 'history.sqlite'}"]
    (aborted,) = [run for run in store.runs() if run.results_dir == str(run_dir.resolve())]
    assert aborted.status == "aborted" and aborted.cluster == CLUSTER
    assert aborted.error is not None and "orchestrator" in aborted.error
    assert aborted.error == load_manifest(run_dir).error
    # It measured nobody before it died: local1 stays confirmed, not recovered.
    status = {s.node: s.status for s in summarize(store.node_runs(cluster=CLUSTER))}
    assert status == {"local0": "healthy", "local1": "confirmed"}


@pytest.mark.parametrize("kind", KINDS)
def test_a_history_that_cannot_be_written_is_one_line_and_the_run_is_still_aborted(
    tmp_path: Path, kind: str
) -> None:
    results = tmp_path / "results"
    path = results / "history.sqlite"
    path.parent.mkdir(mode=0o700)
    with damaged(path, kind):
        run_dir = left_running(results, lock_timeout_s=1)
        (line,) = clean(run_dir)
    assert line.startswith(f"history not written: {path}: ") and REASONS[kind] in line
    assert "\n" not in line


def test_the_history_the_run_named_is_the_one_written(tmp_path: Path) -> None:
    elsewhere = tmp_path / "site" / "history.sqlite"
    run_dir = left_running(tmp_path / "results", url=str(elsewhere))
    assert clean(run_dir) == [f"history: aborted run recorded in {elsewhere}"]
    assert [run.status for run in History(Location(path=elsewhere)).runs()] == ["aborted"]
    assert not (tmp_path / "results" / "history.sqlite").exists()
