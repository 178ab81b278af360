"""`benchfs bench metadata` for real: the metadata workload on a local
4-daemon cluster through the native client and through the FUSE mount, and
by plain POSIX calls on the same disk (few files and directories)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import environment, needs_mount

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

DIR_NAMES = ["Directory creation", "Directory stat", "Directory removal"]
NAMES = [*DIR_NAMES, "File creation", "File stat", "File read", "File removal"]


def bench(tmp_path: Path, directory: Path, *extra: str) -> dict:  # type: ignore[type-arg]
    args = ["bench", "metadata", "--dir", str(directory), "--items", "30", "--json"]
    args += ["--write-bytes", "100", "--read-bytes", "100", *extra]
    args += ["--results-dir", str(tmp_path / "results")]
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", *args],
        capture_output=True, text=True, env=environment(), timeout=280,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report: dict = json.loads(done.stdout)  # type: ignore[type-arg]
    return report


def check_sides(report: dict, sides: list[str]) -> None:  # type: ignore[type-arg]
    assert report["case"]["ranks"] == 4 and report["case"]["items"] == 30
    phases = report["phases"]
    assert [p["mdtest_name"] for p in phases] == NAMES
    assert [p["object"] for p in phases] == ["dir"] * 3 + ["file"] * 4
    for phase in phases:
        assert phase["run_ops_s"] > 0 and phase["posix_ops_s"] > 0
        assert phase["ratio"] == pytest.approx(phase["run_ops_s"] / phase["posix_ops_s"], rel=0.01)
    assert list(report["results_dirs"]) == sides
    for run_dir in report["results_dirs"].values():
        summary = json.loads((Path(run_dir) / "workload" / "summary.json").read_text())
        assert [p["phase"] for p in summary["phases"]] == ["Tree creation", *NAMES, "Tree removal"]


def test_native_and_posix_with_ratios_and_nothing_left(tmp_path: Path) -> None:
    directory = tmp_path / "disk"
    directory.mkdir()
    report = bench(tmp_path, directory, "--no-mount")
    check_sides(report, ["native", "posix"])
    assert all(p["mount_ops_s"] is None and p["mount_ratio"] is None for p in report["phases"])
    assert list(directory.iterdir()) == [], "the benchmark must remove its files"


@needs_mount
def test_the_mount_as_a_third_side(tmp_path: Path) -> None:
    directory = tmp_path / "disk"
    directory.mkdir()
    report = bench(tmp_path, directory)
    check_sides(report, ["native", "mount", "posix"])
    for phase in report["phases"]:
        assert phase["mount_ops_s"] > 0
        assert phase["mount_ratio"] == pytest.approx(
            phase["mount_ops_s"] / phase["posix_ops_s"], rel=0.01
        )
    assert list(directory.iterdir()) == []


def test_a_bad_kind_is_refused_naming_the_option(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "bench", "metadata", "--kind", "folders",
         "--dir", str(tmp_path)],
        capture_output=True, text=True, env=environment(), timeout=60,
    )  # fmt: skip
    assert done.returncode != 0 and "--kind" in done.stderr and "folders" in done.stderr
    assert "Traceback" not in done.stderr and list(tmp_path.iterdir()) == []
