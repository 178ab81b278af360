"""The diagnose worker (``python -m benchfs.node.diagnose``, what the
preflight starts on every node) removes its files on SIGINT, SIGTERM and
SIGHUP; what one killed outright leaves, `benchfs clean` removes, and
never the scratch of a worker still running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import wait_for


def start_worker(directory: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable, "-m", "benchfs.node.diagnose", "--dir", str(directory),
            "--node-name", "n0", "--preflight", "--runtime", "60",
            "--files", "4", "--file-size", str(4 << 20),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # only the signal the test sends reaches it
    )  # fmt: skip


def scratch_of(directory: Path, pid: int) -> Path:
    return directory / f"benchfs-diagnose-{pid}"


def wait_for_files(directory: Path, pid: int) -> Path:
    scratch = scratch_of(directory, pid)
    wait_for(lambda: list(scratch.glob("benchfs-preflight.*")), "the worker's test files")
    return scratch


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_the_worker_removes_its_files_on_a_signal(tmp_path: Path, signum: signal.Signals) -> None:
    worker = start_worker(tmp_path)
    wait_for_files(tmp_path, worker.pid)
    worker.send_signal(signum)
    assert worker.wait(timeout=60) == 128 + signum
    assert list(tmp_path.iterdir()) == []


def test_clean_removes_a_killed_workers_files_and_no_running_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    node_dir = tmp_path / f"benchfs-{os.geteuid()}" / "local0"  # a local node's, by default
    node_dir.mkdir(parents=True, mode=0o700)
    killed = start_worker(node_dir)
    scratch = wait_for_files(node_dir, killed.pid)
    killed.send_signal(signal.SIGKILL)
    assert killed.wait(timeout=60) == -signal.SIGKILL
    assert list(scratch.glob("benchfs-preflight.*")) != []  # SIGKILL: nothing could clean
    running = scratch_of(tmp_path, os.getpid())  # this process's name: a worker still going
    running.mkdir(mode=0o700)
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "clean"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stderr
    assert "scratch of diagnose workers that are gone: removed 1 paths" in done.stdout
    assert not scratch.exists()
    assert running.is_dir()
