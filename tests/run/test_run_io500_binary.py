"""`benchfs run --suite io500-quick` with the reference's own io500 binary
(`suite.tool = "io500"`): on a posix: target and through the mount, one MPI
job of the binary with the ini made from the [suite] settings. Every phase
and the score are there, the score recomputed from the binary's phases with
analysis.io500 is the binary's, its verdicts are the summary's, and the
manifest holds the ini and the exact command line. A missing binary is
named before anything starts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from run_helpers import benchfs_run, environment, manifest, needs_mount, run_dirs, summary
from test_run_io500 import PHASES, quick_args
from test_run_io500_mount import check_nothing_left
from test_run_mount import token_of

from analysis.io500 import score

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

IO500_SEARCH = os.pathsep.join(
    part for part in (os.environ.get("PATH"), os.environ.get("IO500_BIN_DIR")) if part
)
IO500 = shutil.which("io500", path=IO500_SEARCH)
needs_io500 = pytest.mark.skipif(
    IO500 is None or shutil.which("mpirun") is None,
    reason="the io500 binary (PATH, $IO500_BIN_DIR; suite.tool_path in a run) or mpirun not found",
)


def binary_args(tmp_path: Path, *extra: str) -> list[str]:
    """io500-quick as it ships, run by the binary found."""
    return quick_args(tmp_path, "io500", "--set", "suite.tool=io500",
                      "--set", f"suite.tool_path={IO500}", *extra)  # fmt: skip


def check_binary_suite(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every phase with the binary's figure and verdict; the score recomputed."""
    document = summary(run_dir)
    rows = {row["phase"]: row for row in document["phases"]}
    assert list(rows) == PHASES
    for phase, row in rows.items():
        assert row["io500_rate"] > 0, phase
        assert row["io500_unit"] == ("GiB/s" if phase.startswith("ior-") else "kIOPS")
        assert row["tool_version"] == document["suite"]["io500_version"]
    again = score({phase: row["io500_rate"] for phase, row in rows.items()})
    # The binary prints six decimals of each figure and of the score.
    assert document["score"] == pytest.approx(again.score, rel=1e-4, abs=1e-5)
    assert document["bandwidth"] == pytest.approx(again.bandwidth, rel=1e-4, abs=1e-5)
    assert document["metadata"] == pytest.approx(again.metadata, rel=1e-4, abs=1e-5)
    # A 1 s stonewall: the binary itself finds the run not valid, and says why.
    assert document["valid"] is False
    assert document["invalid_reasons"][0] == "stonewall-time 1s != 300s"
    for phase in ("ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write"):
        assert rows[phase]["valid"] is False and rows[phase]["invalid_reasons"], phase
    # find's verdict is the binary's: not valid when it found nothing (a slow
    # target's 1 s mdtest-hard-write may make under 101 files per rank, none *01*).
    assert rows["find"]["items"] > rows["find"]["found"] >= 0
    assert rows["find"]["valid"] is (rows["find"]["found"] > 0)
    tool = manifest(run_dir)["tool"]
    ini = run_dir / "workload" / "tool" / "io500.ini"
    assert tool["name"] == "io500" and tool["binary"] == IO500
    assert tool["version"] == document["suite"]["io500_version"]
    assert tool["ini"] == ini.read_text()
    assert tool["command_lines"] == {"io500": [IO500, str(ini)]}
    assert tool["launched"]["io500"][-2:] == [IO500, str(ini)]
    assert f"resultdir = {run_dir / 'workload' / 'tool' / 'io500'}\n" in tool["ini"]
    assert "[debug]\nstonewall-time = 1\n" in tool["ini"]
    assert (run_dir / "workload" / "tool" / "io500" / "result_summary.txt").is_file()
    report = (run_dir / "report.md").read_text()
    assert "IO500 phases in the order run" in report and "not a valid IO500 result" in report
    return document, rows


@needs_io500
def test_io500_quick_by_the_io500_binary_on_a_posix_directory(tmp_path: Path) -> None:
    target = tmp_path / "posix"
    target.mkdir()
    args = binary_args(tmp_path, "--set", f"workload.target=posix:{target}")
    done = benchfs_run([*args, "--json"], timeout=560)
    assert done.returncode == 0, done.stderr
    assert {"score", "bandwidth", "metadata"} <= json.loads(done.stdout).keys()
    (run_dir,) = run_dirs(tmp_path / "results")
    document, rows = check_binary_suite(run_dir)
    assert document["suite"]["tasks"] == 4 and rows["ior-easy-write"]["numTasks"] == 4
    assert f"datadir = {target}/" in manifest(run_dir)["tool"]["ini"]
    assert rows["find"]["found"] > 0 and rows["find"]["valid"]
    assert list(target.iterdir()) == []
    compared = subprocess.run(
        [sys.executable, "-m", "benchfs", "compare", str(run_dir), str(run_dir), "--json"],
        capture_output=True, text=True, env=environment(), timeout=120,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    by_phase = {(row["phase"], row["metric"]) for row in json.loads(compared.stdout)["metrics"]}
    assert {("suite score", "score"), *((phase, "io500_rate") for phase in PHASES)} <= by_phase
    assert all("stonewall-time 1s != 300s" in n for n in json.loads(compared.stdout)["notes"])


@needs_io500
@needs_mount
def test_io500_quick_by_the_io500_binary_through_the_mount(tmp_path: Path) -> None:
    done = benchfs_run([*binary_args(tmp_path, "--interface", "mount"), "--json"], timeout=560)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    document, _ = check_binary_suite(run_dir)
    assert (document["suite"]["target"], document["suite"]["interface"]) == ("benchfs", "mount")
    # Each rank worked in its own node's mount point, the datadir relative to it.
    tool = manifest(run_dir)["tool"]
    assert f"datadir = benchfs-{token_of(run_dir)}-p0/io500-data\n" in tool["ini"]
    assert "benchfs.node.workdir" in tool["launched"]["io500"]
    check_nothing_left(tmp_path, run_dir)


def test_a_missing_io500_binary_is_named_before_anything_starts(tmp_path: Path) -> None:
    target = tmp_path / "posix"
    target.mkdir()
    args = quick_args(tmp_path, "io500", "--set", f"workload.target=posix:{target}",
                      "--set", "suite.tool=io500",
                      "--set", f"suite.tool_path={tmp_path / 'nowhere'}")  # fmt: skip
    done = benchfs_run(args, timeout=60)
    assert done.returncode != 0
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("error: io500 not found: ") and "suite.tool_path = " in line, line
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "results").exists() or run_dirs(tmp_path / "results") == []
