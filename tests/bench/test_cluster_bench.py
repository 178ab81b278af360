"""`benchfs bench cluster` end to end (tiny sizes, 2 rounds, real daemons and fio): the
paired rounds and ratios in its JSON and table, and its errors. Only the structure and the
arithmetic are checked; whether a target is met depends on the machine
(docs/PERFORMANCE.md)."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from run_helpers import environment

from benchfs.bench.cluster import ClusterBenchCase, fio_jobs

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio"),
]

TINY = ["--transfer-size", "64k", "--block-size", "4m", "--nodes", "2", "--rounds", "2"]


def _benchfs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchfs", "bench", "cluster", *args],
        capture_output=True, text=True, timeout=600, env=environment(),
    )  # fmt: skip


def _run_json(tmp_path: Path, *extra: str) -> tuple[dict[str, Any], Path, Path]:
    directory, results = tmp_path / "disk", tmp_path / "results"
    directory.mkdir()
    done = _benchfs("--json", "--dir", str(directory), "--results-dir", str(results), *TINY, *extra)
    assert done.returncode == 0, done.stderr
    # Nothing is left on the measured disk.
    assert list(directory.iterdir()) == []
    report: dict[str, Any] = json.loads(done.stdout)
    return report, directory, results


def _check_rounds(report: dict[str, Any], sides: list[str], results: Path) -> None:
    """Every side's figures in every round, and each comparison's ratios from them."""
    assert report["case"]["sides"] == sides
    rounds = report["rounds"]
    assert len(rounds) == 2
    for r in rounds:
        assert sorted(r["order"]) == sorted(sides)
        for side in sides:
            assert r[side]["write_MiBps"] > 0 and r[side]["read_MiBps"] > 0
        run_sides = [side for side in sides if side != "fio"]
        assert sorted(r["results_dirs"]) == sorted(run_sides)
        for run_dir in map(Path, r["results_dirs"].values()):
            assert run_dir.parent == results and (run_dir / "manifest.json").is_file()
    # The run and fio swap places from one round to the next.
    first, second = (r["order"] for r in rounds)
    assert (first.index("run") < first.index("fio")) != (second.index("run") < second.index("fio"))
    comparisons = report["comparisons"]
    expected = [(f"run / {ref}", op) for ref in sides[1:] for op in ("write", "read")]
    assert [(c["name"], c["op"]) for c in comparisons] == expected
    for c in comparisons:
        op, paired = c["op"], c["paired"]
        per_round = [r["run"][f"{op}_MiBps"] / r[c["reference"]][f"{op}_MiBps"] for r in rounds]
        assert paired["rounds"] == 2
        assert paired["per_round"] == pytest.approx(per_round, abs=1e-3)
        assert paired["min"] <= paired["q1"] <= paired["median"] <= paired["q3"] <= paired["max"]
        assert c["target"] == 0.9
        assert c["met"] is (statistics.median(per_round) >= 0.9)
        assert c["rounds_met"] == sum(ratio >= 0.9 for ratio in per_round)
    for side in sides:
        medians = report["medians"][side]
        assert medians["write_MiBps"] == pytest.approx(
            sum(r[side]["write_MiBps"] for r in rounds) / 2
        )
    start, end = report["load_average"]["start"], report["load_average"]["end"]
    assert len(start) == len(end) == 3


def _manifest_workload(run_dir: str) -> dict[str, Any]:
    manifest = json.loads((Path(run_dir) / "manifest.json").read_text())
    workload: dict[str, Any] = manifest["effective_config"]["workload"]
    return workload


def test_queue_depth_16_pairs_the_run_with_fio(tmp_path: Path) -> None:
    report, _, results = _run_json(tmp_path, "--bulk-spin-us", "0", "--live-interval-s", "0")
    assert report["case"] == {
        "nodes": 2, "ranks_per_node": 1, "transfer_size": 65536, "block_size": 4 << 20,
        "queue_depth": 16, "rounds": 2, "posix": True, "bulk_spin_us": 0,
        "live_interval_s": 0.0, "fio_huge_pages": False, "jobs": 2, "total_bytes": 8 << 20,
        "sides": ["run", "fio"],
    }  # fmt: skip
    _check_rounds(report, ["run", "fio"], results)
    assert [r["order"] for r in report["rounds"]] == [["run", "fio"], ["fio", "run"]]
    assert "iodepth 16" in report["setup"]["fio"] and "O_DIRECT" in report["setup"]["fio"]
    assert "fallocate=none" in report["setup"]["fio"]
    assert "buffers on 4 KiB pages (iomem=malloc)" in report["setup"]["fio"]
    assert "QD 16" in report["setup"]["run"] and "O_DIRECT" in report["setup"]["run"]
    run_dir = report["rounds"][0]["results_dirs"]["run"]
    assert _manifest_workload(run_dir)["queue_depth"] == 16
    # The daemons' idle policy asked for is the one their run recorded.
    manifest = json.loads((Path(run_dir) / "manifest.json").read_text())
    assert manifest["effective_config"]["cluster"]["bulk_spin_us"] == 0
    # The live view off, as asked: no samples, no verdicts.
    assert manifest["effective_config"]["live"]["interval_s"] == 0
    assert manifest["live"] is None and not (Path(run_dir) / "verdicts.json").exists()


def test_queue_depth_1_adds_the_disk_through_posix(tmp_path: Path) -> None:
    report, _, results = _run_json(tmp_path, "--queue-depth", "1")
    assert report["case"]["queue_depth"] == 1
    _check_rounds(report, ["run", "fio", "posix"], results)
    # The run in the middle, the references alternating around it.
    assert [r["order"] for r in report["rounds"]] == [
        ["fio", "run", "posix"], ["posix", "run", "fio"]]  # fmt: skip
    assert "iodepth 1," in report["setup"]["fio"]
    for r in report["rounds"]:
        run, posix = (_manifest_workload(r["results_dirs"][s]) for s in ("run", "posix"))
        assert run["queue_depth"] == posix["queue_depth"] == 1
        assert (run["target"], posix["direct"]) == ("benchfs", True)
        assert posix["target"].startswith("posix:")


def test_table_names_the_depth_and_every_comparison(tmp_path: Path) -> None:
    directory = tmp_path / "disk"
    directory.mkdir()
    done = _benchfs(
        "--dir", str(directory), "--results-dir", str(tmp_path / "results"), *TINY,
        "--queue-depth", "1", "--no-posix",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "queue depth 1 per job on every side, all O_DIRECT, 2 paired rounds" in text
    rows = [line.split() for line in done.stdout.splitlines()]
    ratio_rows = [row for row in rows if row[:3] == ["run", "/", "fio"]]
    assert [row[3] for row in ratio_rows] == ["write", "read"]
    for row in ratio_rows:
        low, high = (float(x) for x in row[6].split("-"))
        assert low <= float(row[4]) <= high, "the median lies within the rounds' range"
        assert row[7] in ("met", "MISSED") and row[8].endswith("/2")
    assert not any(row[:2] == ["run", "/"] and "posix" in row[2] for row in rows)
    assert "results: 2 runs in" in text


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--rounds", "0"], "--rounds"),
        (["--queue-depth", "0"], "--queue-depth"),
        (["--queue-depth", "1000"], "--queue-depth"),
        (["--nodes", "0"], "--nodes"),
        (["--block-size", "lots"], "--block-size"),
        (["--bulk-spin-us", "-1"], "--bulk-spin-us"),
    ],
)
def test_bad_option_values_name_the_option(args: list[str], option: str) -> None:
    """The command line's usage error: one message naming the option, no traceback."""
    done = _benchfs(*args)
    assert done.returncode == 2
    messages = [line for line in done.stderr.splitlines() if "Invalid value for" in line]
    assert len(messages) == 1 and option in messages[0], done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_errors_name_the_input(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    done = _benchfs("--dir", str(missing), "--nodes", "2")
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: benchmark directory {missing} does not exist"
    uneven = _benchfs(
        "--transfer-size", "64k", "--block-size", "100k", "--nodes", "2",
        "--results-dir", str(tmp_path / "results"),
    )  # fmt: skip
    assert uneven.returncode == 2
    assert "block_size (102400) must be a multiple of transfer_size (65536)" in uneven.stderr
    assert "Traceback" not in uneven.stderr


def test_fio_writes_fresh_files_as_the_daemons_do() -> None:
    # fio preallocates by default; the daemons' chunk files and the posix:
    # files grow with each write, so fio's write phase must not preallocate.
    write, read = fio_jobs(ClusterBenchCase(nodes=2, block_size=1 << 20))
    assert "--fallocate=none" in write.arguments() and write.rw == "write"
    assert not write.unlink and read.rw == "read" and read.unlink
    assert "--fallocate=none" not in read.arguments()
