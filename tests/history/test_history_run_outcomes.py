"""What a real `benchfs run` does with its history: a run into a history that
cannot be written completes and says so, two runs at once are both recorded,
and a failed run is recorded as failed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from damaged import KINDS, REASONS, damaged
from run_helpers import environment, manifest, run_dirs, running_phase, small_args

from analysis.layout import RunLayout
from analysis.verdicts import Figures, Interval, NodeVerdict, Verdicts
from benchfs.history.store import History, Location

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def two_nodes(tmp_path: Path, *extra: str) -> list[str]:
    return small_args(tmp_path, "--set", "cluster.local_nodes=2", *extra)


def start(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "benchfs", "run", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(),
    )  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.usefixtures("whole_lines")
def test_a_run_into_a_history_that_cannot_be_written_completes_and_says_so(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "results" / "history.sqlite"
    path.parent.mkdir(mode=0o700)
    with damaged(path, kind):
        process = start(two_nodes(tmp_path, "--set", "history.lock_timeout_s=1", "--json"))
        out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    (run_dir,) = run_dirs(tmp_path / "results")
    assert manifest(run_dir)["status"] == "completed"
    line = json.loads(out)["history"]
    assert line.startswith(f"history not written: {path}: ") and REASONS[kind] in line
    assert "\n" not in line
    assert line in manifest(run_dir)["notes"]
    assert line in err.splitlines()


def test_two_runs_at_once_are_both_recorded(tmp_path: Path) -> None:
    results = tmp_path / "results"
    runs = [start(two_nodes(tmp_path, "--label", f"at-once-{index}")) for index in range(2)]
    for process in runs:
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
    recorded = History(Location(path=results / "history.sqlite")).runs()
    assert sorted(run.label for run in recorded) == ["at-once-0", "at-once-1"]
    assert sorted(run.results_dir for run in recorded) == [str(d) for d in run_dirs(results)]
    assert all(run.status == "completed" and run.node_count == 2 for run in recorded)

    # The run's verdicts as the live model writes them: they speak for the node.
    first = run_dirs(results)[0]
    slow = NodeVerdict(
        node="local1", phase="read", metric="storage_op_ms", op="read", status="slow",
        layer="kernel", pattern="onset", onset_s=10.0, intervals=[Interval(start_s=10.0)],
        figures=Figures(unit="ms", p50=194.0, p99=260.0, others_p50=1.1, others_p99=2.0),
        verdict="local1: storage op +193 ms while the device's await is normal: delayed in "
        "the kernel above the device",
    )  # fmt: skip
    healthy = NodeVerdict(node="local0", phase="read", metric="storage_op_ms", status="ok",
                          figures=Figures(unit="ms", p50=1.1), verdict="ok")  # fmt: skip
    document = Verdicts(nodes=["local0", "local1"], verdicts=[healthy, slow])
    RunLayout(first).verdicts.write_text(document.to_json())
    imported = subprocess.run(
        [sys.executable, "-m", "benchfs", "history", "import", str(first),
         "--results-dir", str(results)],
        capture_output=True, text=True, env=environment(), timeout=300,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    runs = History(Location(path=results / "history.sqlite")).node_runs(node="local1")
    row = next(run.row for run in runs if run.results_dir == str(first))
    assert row.flagged and row.layer == "kernel" and row.pattern == "onset (t+10 s to the end)"
    assert (row.value, row.typical, row.unit) == (194.0, 1.1, "ms")
    assert row.reason == slow.verdict
    assert not next(r.row for r in History(Location(path=results / "history.sqlite")).node_runs(
        node="local0") if r.results_dir == str(first)).flagged  # fmt: skip


@pytest.mark.usefixtures("whole_lines")
def test_a_failed_run_is_recorded_as_failed(tmp_path: Path) -> None:
    # No daemon registers within a millisecond: the run fails once they have started.
    process = start(
        two_nodes(
            tmp_path,
            "--set",
            "cluster.deadlines.register_s=0.001",
            "--set",
            "cluster.deadlines.per_node_s=0",
        )
    )
    _, err = process.communicate(timeout=600)
    assert process.returncode != 0
    (run_dir,) = run_dirs(tmp_path / "results")
    assert manifest(run_dir)["status"] == "failed"
    (run,) = History(Location(path=tmp_path / "results" / "history.sqlite")).runs()
    assert run.status == "failed" and run.error == manifest(run_dir)["error"]
    assert f"history: failed run recorded in {tmp_path / 'results' / 'history.sqlite'}" in (
        err.splitlines()
    )


@pytest.mark.usefixtures("whole_lines")
def test_an_interrupted_run_is_recorded_as_interrupted(tmp_path: Path) -> None:
    args = two_nodes(tmp_path, "--repetitions", "100000", "--transfer-size", "4k")
    with running_phase(tmp_path, args) as run:
        os.kill(run.process.pid, signal.SIGINT)
        code, output = run.finish()
    assert code == 128 + signal.SIGINT, output
    (run_dir,) = run_dirs(tmp_path / "results")
    assert manifest(run_dir)["status"] == "interrupted"
    (recorded,) = History(Location(path=tmp_path / "results" / "history.sqlite")).runs()
    assert recorded.status == "interrupted" and recorded.error == "interrupted (SIGINT)"
    history = tmp_path / "results" / "history.sqlite"
    assert f"history: interrupted run recorded in {history}" in output.splitlines()
