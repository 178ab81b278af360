"""A `benchfs run` killed with SIGKILL cleans nothing itself: its daemons and
ranks die with it, and `benchfs clean` (or the next run) removes what it
left, marks its manifest aborted and records it so in the history."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cluster.proc_helpers import alive
from run_helpers import (
    assert_nothing_left,
    benchfs_run,
    environment,
    manifest,
    run_dirs,
    running_phase,
    scratch_dirs,
    small_args,
    wait_for,
)

from benchfs.history.store import History, Location


def benchfs_clean() -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchfs", "clean"],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=120,
    )


@pytest.fixture
def own_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run records of this test's runs only (other runs on the machine keep theirs)."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    return tmpdir


def kill_orchestrator(tmp_path: Path) -> tuple[str, list[int]]:
    """Start a run, SIGKILL its orchestrator mid-phase; its token and its
    daemons' and ranks' pids, once they are all gone."""
    args = small_args(tmp_path, "--repetitions", "100000", "--transfer-size", "4k")
    with running_phase(tmp_path, args) as run:
        daemons = run.pids("g0/registry/*.json")
        ranks = run.pids("p0/ranks/*.json")
        assert len(daemons) == 4 and len(ranks) == 4
        os.kill(run.process.pid, signal.SIGKILL)
        run.process.wait()
        wait_for(
            lambda: not [pid for pid in daemons + ranks if alive(pid)],
            "the daemons and ranks to die with their orchestrator",
            timeout=60,
        )
    return run.token, daemons + ranks


def test_clean_removes_what_a_killed_run_left_and_marks_it_aborted(
    tmp_path: Path, own_tmpdir: Path
) -> None:
    token, pids = kill_orchestrator(tmp_path)
    (run_dir,) = run_dirs(tmp_path / "results")
    assert manifest(run_dir)["status"] == "running"  # nobody was left to say otherwise
    assert scratch_dirs(tmp_path / "results")  # left behind
    done = benchfs_clean()
    assert done.returncode == 0, done.stderr
    assert f"run {token} (orchestrator pid" in done.stdout, done.stdout
    recorded = manifest(run_dir)
    assert recorded["status"] == "aborted"
    assert "orchestrator" in recorded["error"] and "gone" in recorded["error"]
    assert any("cleaned later" in note for note in recorded["notes"]), recorded["notes"]
    history = tmp_path / "results" / "history.sqlite"
    assert f"history: aborted run recorded in {history}" in done.stdout, done.stdout
    (run,) = History(Location(path=history)).runs()
    assert (run.status, run.error) == ("aborted", recorded["error"])
    assert run.results_dir == str(run_dir.resolve())
    assert_nothing_left(tmp_path, token, pids)
    again = benchfs_clean()
    assert again.returncode == 0 and again.stdout.startswith("nothing to clean"), again.stdout


def test_the_next_run_cleans_up_after_a_killed_one(
    tmp_path: Path, own_tmpdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token, pids = kill_orchestrator(tmp_path)
    (killed,) = run_dirs(tmp_path / "results")
    monkeypatch.setenv("COLUMNS", "1000")  # each step the run prints on one line
    done = benchfs_run(small_args(tmp_path, "--label", "next"))
    assert done.returncode == 0, done.stderr
    assert f"run {token}" in done.stderr + done.stdout
    assert manifest(killed)["status"] == "aborted"
    history = tmp_path / "results" / "history.sqlite"
    assert f"history: aborted run recorded in {history}" in done.stderr.splitlines()
    runs = {run.label: run.status for run in History(Location(path=history)).runs()}
    assert runs == {"run": "aborted", "next": "completed"}
    assert_nothing_left(tmp_path, token, pids)
