"""`benchfs compare` on real runs of the local cluster: two runs of one setup are
judged against their own repetitions, a run with one repetition gets no noise
estimate, and a run on a throttled disk (tests/fixtures/slowdisk.py) reads
"changed" for bandwidth.

Real noise between two runs is whatever the machine gives, so the first test
checks the verdict machinery on it (intervals hold the change, the verdict
follows p and the interval, the samples are the summary's repetitions), not
that the noise stays small.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fixtures.slowdisk import SlowDisk
from run_helpers import benchfs_run, environment, run_dirs, small_args, summary

from analysis.stats import noise

MIB = 1 << 20
REPETITIONS = 5
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def compare(a: Path, b: Path, *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "compare", str(a), str(b), "--json", *extra],
        capture_output=True, text=True, env=environment(), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def workload_rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [row for row in document["metrics"] if row["phase"] in ("write", "read")
            and row["verdict"] != "no noise estimate (one value per run)"]  # fmt: skip


def repetition_values(run_dir: Path, phase: str, column: str) -> list[float]:
    return [float(row[column]) for row in summary(run_dir)["repetitions"] if row["phase"] == phase]


def check_verdicts(document: dict[str, Any], a: Path, b: Path) -> None:
    """Every tested row: interval around the change, verdict from p and the interval,
    and figures recomputed from the runs' own summaries."""
    rows = workload_rows(document)
    assert {row["metric"] for row in rows} >= {"bwMeanMIB", "p50_us", "p99_us", "MeanTime"}
    for row in rows:
        assert row["n_A"] == row["n_B"] == REPETITIONS, row
        assert row["verdict"] in ("changed", "within noise"), row
        assert row["test"] == "Mann-Whitney U (exact)", row
        low, high = row["ci_pct"]
        assert low <= row["change_pct"] <= high, row
        beyond = row["p_value"] < 0.05 and (low > 0 or high < 0)
        assert (row["verdict"] == "changed") == beyond, row
        assert row["reps_needed"] is None or row["reps_needed"] >= 2
    for phase in ("write", "read"):
        row = next(r for r in rows if (r["phase"], r["metric"]) == (phase, "bwMeanMIB"))
        values_a = repetition_values(a, phase, "bwMiB")
        values_b = repetition_values(b, phase, "bwMiB")
        assert len(values_a) == len(values_b) == REPETITIONS
        assert row["A"] == pytest.approx(np.mean(values_a))
        phase_row = next(p for p in summary(a)["phases"] if p["phase"] == phase)
        assert row["A"] == pytest.approx(phase_row["bwMeanMIB"])  # IOR's own figure
        p_value, _ = noise.mann_whitney_p(np.array(values_a), np.array(values_b))
        assert row["p_value"] == pytest.approx(p_value)


def test_two_runs_of_one_setup_are_judged_against_their_repetitions(tmp_path: Path) -> None:
    args = small_args(tmp_path, "--repetitions", str(REPETITIONS))
    for _ in range(2):
        done = benchfs_run(args)
        assert done.returncode == 0, done.stderr
    a, b = run_dirs(tmp_path / "results")
    document = compare(a, b, "--out", str(tmp_path / "report"))
    check_verdicts(document, a, b)
    assert document["config_diff"] == []  # the same setup, key for key
    assert document["method"]["confidence"] == 0.95 and document["method"]["seed"] == 0
    assert document["tested"] == len(workload_rows(document))
    assert compare(a, b) == {**document}  # the same inputs give the same output
    report = (tmp_path / "report" / "compare.md").read_text()
    assert "rows tested at 95%" in report and "exact two-sided Mann-Whitney U" in report

    # One repetition: a change, but no noise estimate and no verdict.
    single = tmp_path / "single"
    done = benchfs_run(small_args(single, "--repetitions", "1"))
    assert done.returncode == 0, done.stderr
    (c,) = run_dirs(single / "results")
    rows = workload_rows(compare(a, c))
    assert rows and all(row["verdict"] == "no noise estimate (1 repetition)" for row in rows)
    assert all(row["ci_pct"] == [None, None] and row["p_value"] is None for row in rows)
    # A's five repetitions still tell how many a claim would need.
    assert any(row["reps_needed"] is not None for row in rows)


def _in_group(disk: SlowDisk, args: list[str]) -> subprocess.CompletedProcess[str]:
    argv = disk.in_group([sys.executable, "-m", "benchfs", "run", *args])
    return subprocess.run(argv, capture_output=True, text=True, env=environment(), timeout=400)


@pytest.mark.root
def test_a_throttled_disk_is_changed_for_bandwidth(
    tmp_path: Path, slow_disk_factory: Callable[..., SlowDisk]
) -> None:
    disk = slow_disk_factory(tmp_path / "disk", size_mib=256)
    # Both runs keep their data on the loop device; only the second runs in the
    # throttled group. 4 ranks x 256 KiB: 1 MiB per phase and repetition.
    args = [
        "--results-dir", str(tmp_path / "results"),
        "--set", f"cluster.data_dir={disk.mount_point / 'data'}",
        "--set", "cluster.chunk_size=256k",
        "--set", "cluster.buffer_pool_size=16m",
        "--set", "cluster.deadlines.shutdown_s=5",
        "--set", "preflight.enabled=false",
        "--transfer-size", "64k", "--block-size", "256k",
        "--set", "workload.stonewall_s=0",
        "--repetitions", str(REPETITIONS),
    ]  # fmt: skip
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    disk.throttle(read_bps=4 * MIB, write_bps=4 * MIB)
    done = _in_group(disk, args)
    assert done.returncode == 0, done.stderr
    fast, slow = run_dirs(tmp_path / "results")
    document = compare(fast, slow)
    check_verdicts(document, fast, slow)
    assert document["config_diff"] == []  # only the disk differs, not the setup
    rows = {(row["phase"], row["metric"]): row for row in document["metrics"]}
    for phase in ("write", "read"):
        bandwidth = rows[(phase, "bwMeanMIB")]
        assert bandwidth["verdict"] == "changed" and bandwidth["direction"] == "worse", bandwidth
        assert bandwidth["B"] < bandwidth["A"] / 4, bandwidth  # the throttle acted
        assert bandwidth["ci_pct"][1] < 0
