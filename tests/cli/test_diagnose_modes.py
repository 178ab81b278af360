"""`benchfs diagnose` in full (non-quick) mode, on several local nodes, with --deadline and
stopped by a signal, as a real subprocess."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from signal_helpers import assert_stopped_cleanly, command_temp_dir, interrupt, running

pytestmark = pytest.mark.skipif(
    shutil.which("fio") is None or shutil.which("iostat") is None, reason="needs fio and iostat"
)
TIMED_FIO_STEPS = (
    "seq_write_direct", "seq_read_direct", "rand_rw",
    "seq_write_buffered", "seq_read_buffered", "fsync_write",
)  # fmt: skip


def _diagnose(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchfs", "diagnose", *args],
        capture_output=True,
        text=True,
        timeout=900,  # a full run takes about 1.5 min per node; only a hang guard
    )


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_full_mode_runs_the_long_plan(tmp_path: Path) -> None:
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    done = _diagnose("--dir", str(work), "--output", str(out), "--json")
    document = json.loads(done.stdout)
    assert done.returncode == document["exit_code"] in (0, 1), done.stderr
    assert document["quick"] is False
    (node,) = document["nodes"]
    tests = {test["name"]: test for test in node["measurement"]["tests"]}
    assert list(tests) == [*TIMED_FIO_STEPS, "metadata"]
    assert not [name for name, test in tests.items() if test["error"]]
    # The full plan, as fio was given it: 10 s per timed test, a 1 GiB file.
    for name in TIMED_FIO_STEPS:
        fio = json.loads((out / "raw" / f"{name}.fio.json").read_text())
        options = fio["jobs"][0]["job options"]
        assert options["runtime"] == "10", (name, options)
        if name != "fsync_write":
            assert options["size"] == str(1 << 30), (name, options)
    assert tests["metadata"]["metrics"]["files"] == 2000
    assert list(work.iterdir()) == []


def test_deadline_kills_every_node_and_names_it(tmp_path: Path) -> None:
    done = _diagnose(
        "--nodes", "local:2", "--dir", str(tmp_path), "--deadline", "1", "--quick", "--json"
    )
    assert done.returncode == 2, done.stderr
    document = json.loads(done.stdout)
    assert document["status"] == "error"
    errors = {node["node"]: node["measurement"]["error"] for node in document["nodes"]}
    assert errors == {
        name: f"diagnose worker on {name} did not finish within 1 s"
        for name in ("local0", "local1")
    }


@pytest.mark.slow
def test_local_nodes_work_in_directories_that_go_with_the_run(tmp_path: Path) -> None:
    """Each local node works in its own ``DIR/NODE``: those the run made are
    removed after it, one that was there before stays."""
    work = tmp_path / "work"
    (work / "local0").mkdir(parents=True)
    done = _diagnose(
        "--nodes", "local:2", "--dir", str(work), "--quick", "--json", "--deadline", "600"
    )
    document = json.loads(done.stdout)
    assert done.returncode == document["exit_code"] in (0, 1), done.stderr
    directories = {node["node"]: node["measurement"]["directory"] for node in document["nodes"]}
    assert directories == {name: str(work / name) for name in ("local0", "local1")}
    assert list(work.iterdir()) == [work / "local0"]
    assert list((work / "local0").iterdir()) == []


def test_local_nodes_that_cannot_run_leave_no_directories(tmp_path: Path) -> None:
    work, bare = tmp_path / "work", tmp_path / "bare"
    work.mkdir()
    bare.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "diagnose", "--nodes", "local:2", "--dir", str(work),
         "--quick", "--json"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PATH": str(bare)},  # no fio: every worker fails
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    errors = {
        node["node"]: node["measurement"]["error"] for node in json.loads(done.stdout)["nodes"]
    }
    assert errors == dict.fromkeys(
        ("local0", "local1"), "fio not found on PATH (install the fio package)"
    )
    assert list(work.iterdir()) == []


def test_a_deadline_below_one_second_is_refused() -> None:
    done = _diagnose("--deadline", "0.5", "--quick")
    assert done.returncode == 2
    assert "--deadline" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("signum", "tool"),
    [(signal.SIGTERM, "fio"), (signal.SIGHUP, "iostat")],
    ids=["SIGTERM-in-fio", "SIGHUP-in-iostat"],
)
def test_a_signal_mid_diagnose_stops_fio_and_iostat_and_removes_the_test_files(
    tmp_path: Path, signum: int, tool: str
) -> None:
    work, temp = tmp_path / "work", command_temp_dir(tmp_path)
    work.mkdir()
    # Mid-run: the first test's iostat (started before its fio) or fio running;
    # the full plan has six timed tests of 10 s after it.
    stopped = interrupt(
        ["diagnose", "--dir", str(work)], tmp_path, lambda pid: running(pid, tool), signum,
        temp_dir=temp,
    )  # fmt: skip
    assert_stopped_cleanly(stopped, signum, tmp_path)
    assert list(work.iterdir()) == []  # the scratch dir and the test file
    assert list(temp.iterdir()) == []  # fio's log dir
