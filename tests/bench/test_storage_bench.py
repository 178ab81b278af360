"""`benchfs bench storage` for real: the engine and fio on one directory (tiny sizes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchfs.cli.main import app
from benchfs.tools.fsinfo import inspect_directory

runner = CliRunner()


@pytest.fixture(scope="module")
def bench_json(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    directory = tmp_path_factory.mktemp("bench")
    args = ["bench", "storage", "--dir", str(directory), "--json"]
    args += ["--seq-size", "32m", "--rand-size", "8m", "--trace-repeats", "2", "--rounds", "2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert list(directory.iterdir()) == [], "the benchmark must remove its files"
    parsed: dict[str, object] = json.loads(result.stdout)
    return parsed


def test_reports_the_four_cases_with_both_sides(bench_json: dict[str, object]) -> None:
    cases = bench_json["cases"]
    assert isinstance(cases, list)
    assert [case["name"] for case in cases] == [
        "seq_write_1MiB",
        "seq_read_1MiB",
        "rand_write_4KiB",
        "rand_read_4KiB",
    ]
    for case in cases:
        assert case["engine_MiBps"] > 0
        assert case["fio_MiBps"] > 0
        assert case["engine"]["p99_us"] >= case["engine"]["p50_us"] > 0
        assert case["fio"]["p99_us"] >= case["fio"]["p50_us"] > 0
        assert case["engine_io_depth_mean"] >= 1
        paired = case["paired_ratio"]
        assert paired["rounds"] == 2 == len(case["rounds"])
        assert paired["min"] <= case["ratio"] <= paired["max"]
        per_round = [r["engine"]["MiBps"] / r["fio"]["MiBps"] for r in case["rounds"]]
        assert paired["per_round"] == pytest.approx(per_round, abs=0.001)
        assert [r["first"] for r in case["rounds"]] == ["engine", "fio"]
        for side in ("engine_setup", "fio_setup"):
            assert case[side]["queue_depth"] == 32
            assert case[side]["direct"] is True
        assert case["fio_setup"]["tool"].startswith("fio")


def test_each_side_says_how_its_io_reached_the_disk(bench_json: dict[str, object]) -> None:
    disks = inspect_directory(Path(str(bench_json["directory"]))).disks
    disk = disks[0] if len(disks) == 1 else None
    assert bench_json["disk"] == disk
    cases = bench_json["cases"]
    assert isinstance(cases, list)
    for case, size in zip(cases, (32, 32, 8, 8), strict=True):
        for r in case["rounds"]:
            for tool in ("engine", "fio"):
                side = r[tool]
                if disk is None:
                    assert side["disk_requests"] is side["disk_request_KiB"] is None
                    continue
                # O_DIRECT: every byte of the side crossed this disk, in requests of
                # whatever size the block layer made of them.
                moved = side["disk_requests"] * side["disk_request_KiB"] * 1024
                assert moved >= size * 2**20 * 0.999, (case["name"], tool, side)


def test_trace_overhead_is_measured(bench_json: dict[str, object]) -> None:
    ratio = bench_json["trace_overhead_ratio"]
    assert isinstance(ratio, float)
    assert ratio > 0
    overhead = bench_json["trace_overhead"]
    assert isinstance(overhead, dict)
    assert overhead["rounds"] == 2
    assert overhead["min"] <= ratio <= overhead["max"]


def test_table_output_names_cases(tmp_path: Path) -> None:
    args = ["bench", "storage", "--dir", str(tmp_path), "--seq-size", "8m"]
    args += ["--rand-size", "1m", "--trace-repeats", "0", "--rounds", "2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = result.stdout.splitlines()
    assert "…" not in result.stdout, "80 columns must show every figure whole"
    assert any(row.split()[:2] == ["rand_read_4KiB", "engine"] for row in rows if row.strip())
    assert any(row.split()[:1] == ["fio"] for row in rows if row.strip())
    assert "MiB/s" in result.stdout and "p99 (ms)" in result.stdout
    assert "2 paired rounds" in result.stdout
    assert "QD 32, O_DIRECT" in result.stdout and "ioengine=io_uring" in result.stdout
    disks = inspect_directory(tmp_path).disks
    if len(disks) == 1:  # each side's requests as the disk saw them, in the caption
        words = " ".join(result.stdout.split())
        assert f"mean request on {disks[0]}, KiB (engine / fio): seq_write_1MiB " in words
    fio_rows = [row.split() for row in rows if row.split()[:1] == ["fio"]]
    low, high = (float(x) for x in fio_rows[-1][5].split("-"))
    assert low <= high, "the fio row's ratio column is the paired ratios' range"


def test_missing_directory_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    result = runner.invoke(app, ["bench", "storage", "--dir", str(missing)])
    assert result.exit_code != 0
    assert str(missing) in str(result.exception)
