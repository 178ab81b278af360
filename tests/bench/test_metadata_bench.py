"""`benchfs bench metadata` for real: the native metadata workload on a local
4-daemon cluster and the POSIX loop on the same directory (few files)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import environment

from benchfs.bench.posix_metadata import PosixMetadataCase, run_posix_metadata
from benchfs.errors import ToolError

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_both_sides_with_ratios_and_nothing_left(tmp_path: Path) -> None:
    directory = tmp_path / "disk"
    directory.mkdir()
    args = ["bench", "metadata", "--dir", str(directory), "--items", "30", "--json"]
    args += ["--write-bytes", "100", "--read-bytes", "100"]
    args += ["--results-dir", str(tmp_path / "results")]
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", *args],
        capture_output=True, text=True, env=environment(), timeout=280,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["case"]["ranks"] == 4 and report["case"]["items"] == 30
    phases = report["phases"]
    assert [p["mdtest_name"] for p in phases] == [
        "File creation", "File stat", "File read", "File removal",
    ]  # fmt: skip
    for phase in phases:
        assert phase["run_ops_s"] > 0 and phase["posix_ops_s"] > 0
        assert phase["ratio"] == pytest.approx(phase["run_ops_s"] / phase["posix_ops_s"], rel=0.01)
    assert list(directory.iterdir()) == [], "the benchmark must remove its files"
    summary = Path(report["results_dir"]) / "workload" / "summary.json"
    phase_names = [p["phase"] for p in json.loads(summary.read_text())["phases"]]
    assert phase_names == [p["mdtest_name"] for p in phases]


def test_posix_side_does_every_item_and_removes_them(tmp_path: Path) -> None:
    rates = run_posix_metadata(
        PosixMetadataCase(ranks=2, items=50, write_bytes=10, read_bytes=10), tmp_path
    )
    assert set(rates) == {"create", "stat", "read", "remove"}
    assert all(rate > 0 for rate in rates.values())
    assert list(tmp_path.iterdir()) == []


def test_a_failing_posix_rank_is_an_error_not_a_hang(tmp_path: Path) -> None:
    (tmp_path / "tree.1").mkdir()  # rank 1 cannot make its directory
    with pytest.raises(ToolError, match="failed"):
        run_posix_metadata(PosixMetadataCase(ranks=2, items=5), tmp_path, timeout_s=60)
