"""A run stopped during its preflight leaves none of the preflight's files:
SIGINT, SIGTERM and SIGHUP through Open MPI's mpirun (which kills its ranks
soon after passing a stop on) and the local launcher; a run killed with
SIGKILL is cleaned by `benchfs clean`, run from another directory although
the run's results directory was relative: the preflight's scratch on every
node, Open MPI's session directory of the run, and its manifest marked
aborted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import environment, manifest, run_dirs, wait_for

LAUNCHERS = {
    "mpirun": ["--set", "launcher.name=mpirun"],
    "local": [],
}


@pytest.fixture
def own_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run records (and Open MPI's session dirs) of this test's runs only."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    return tmpdir


def preflight_files(data: Path) -> list[Path]:
    return sorted(data.rglob("benchfs-preflight.*")) if data.exists() else []


def leftovers(data: Path) -> list[str]:
    """Anything of BenchFS's under the data dir (the nodes' own dirs aside)."""
    return sorted(str(p) for p in data.rglob("benchfs-*")) if data.exists() else []


def mpi_session_dirs(tmpdir: Path) -> list[Path]:
    return sorted(tmpdir.glob(f"benchfs-{os.geteuid()}/benchfs-*-mpi"))


def start_in_preflight(tmp_path: Path, launcher: str) -> tuple[subprocess.Popen[bytes], Path]:
    """A run (results dir relative to its working directory) once every
    node's preflight has written its files; the process and its work dir."""
    work = tmp_path / "work"
    work.mkdir()
    hostfile = tmp_path / "hosts"
    hostfile.write_text("localhost slots=4\n")
    nodes = ["--nodes", str(hostfile)] if launcher == "mpirun" else []
    data = tmp_path / "data"
    log = tmp_path / "run.log"
    process = subprocess.Popen(
        [
            sys.executable, "-m", "benchfs", "run", "--results-dir", "results",
            *nodes, *LAUNCHERS[launcher],
            "--set", f"cluster.data_dir={data}",
            "--set", "cluster.buffer_pool_size=16m",
            "--set", "preflight.runtime_s=60",
            "--transfer-size", "64k", "--block-size", "1m",
        ],
        cwd=work,
        env={**environment(), "PYTHONPATH": str(Path.cwd())},
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    wait_for(lambda: len(preflight_files(data)) >= 4, "the preflight's files", log=log)
    return process, work


@pytest.mark.parametrize(
    ("launcher", "signum"),
    [
        ("mpirun", signal.SIGINT),
        ("mpirun", signal.SIGTERM),
        ("mpirun", signal.SIGHUP),
        ("local", signal.SIGINT),
        ("local", signal.SIGHUP),
    ],
    ids=["mpirun-INT", "mpirun-TERM", "mpirun-HUP", "local-INT", "local-HUP"],
)
def test_a_signal_during_the_preflight_leaves_none_of_its_files(
    tmp_path: Path, own_tmpdir: Path, launcher: str, signum: signal.Signals
) -> None:
    process, work = start_in_preflight(tmp_path, launcher)
    # Open MPI keeps its session directory in the run's own (a host's under it).
    if launcher == "mpirun":
        assert list(mpi_session_dirs(own_tmpdir)[0].glob("h-*/ompi.*")) != []
    process.send_signal(signum)
    assert process.wait(timeout=180) == 128 + signum, (tmp_path / "run.log").read_text()
    assert leftovers(tmp_path / "data") == []
    assert mpi_session_dirs(own_tmpdir) == []
    (run_dir,) = run_dirs(work / "results")
    assert manifest(run_dir)["status"] == "interrupted"


def test_clean_removes_what_a_run_killed_in_its_preflight_left(
    tmp_path: Path, own_tmpdir: Path
) -> None:
    process, work = start_in_preflight(tmp_path, "mpirun")
    (session,) = mpi_session_dirs(own_tmpdir)
    assert list(session.glob("h-*/ompi.*")) != []
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=60) == -signal.SIGKILL
    # From another directory: the run's relative results dir is not relative to it.
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "clean"],
        cwd=tmp_path,
        env={**environment(), "PYTHONPATH": str(Path.cwd())},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "marked 1 manifests aborted" in done.stdout, done.stdout
    assert leftovers(tmp_path / "data") == []
    assert mpi_session_dirs(own_tmpdir) == []
    assert not session.exists()
    (run_dir,) = run_dirs(work / "results")
    assert manifest(run_dir)["status"] == "aborted"
