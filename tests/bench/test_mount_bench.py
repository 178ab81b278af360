"""`benchfs bench mount`: its paired rounds (arithmetic, order, JSON), and one
real run on a local 4-daemon cluster through the FUSE mount (small sizes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import environment, needs_mount

from benchfs.bench.mount import PATTERNS, MountBenchSettings, Side, cases_of, side_order
from benchfs.bench.paired import PairedDifferences

SEQ_WRITE, SEQ_READ, SMALL_WRITE, SMALL_READ = (p.name for p in PATTERNS)


def figures(
    native: dict[str, list[float]], mount: dict[str, list[float]], disk: dict[str, list[float]]
) -> dict[tuple[str, Side], list[float]]:
    out: dict[tuple[str, Side], list[float]] = {}
    for side, values in (("native", native), ("mount", mount), ("local disk", disk)):
        for name, rounds in values.items():
            out[(name, side)] = rounds  # type: ignore[index]
    return out


def three_rounds() -> dict[tuple[str, Side], list[float]]:
    # Round 2 is a busy moment for both sides of every pair.
    return figures(
        native={SEQ_WRITE: [1000, 400, 1000], SEQ_READ: [1000, 500, 900],
                SMALL_WRITE: [200, 600, 210], SMALL_READ: [150, 500, 160]},
        mount={SEQ_WRITE: [850, 340, 700], SEQ_READ: [700, 350, 720],
               SMALL_WRITE: [230, 650, 260], SMALL_READ: [200, 520, 180]},
        disk={SEQ_WRITE: [2000, 1700, 1400], SEQ_READ: [1400, 1000, 1440],
              SMALL_WRITE: [50, 65, 52], SMALL_READ: [40, 52, 45]},
    )  # fmt: skip


def test_the_mount_runs_between_the_references_which_alternate() -> None:
    assert side_order(0) == ("native", "mount", "local disk")
    assert side_order(1) == ("local disk", "mount", "native")
    assert side_order(2) == side_order(0)


def test_bandwidth_is_the_median_of_per_round_ratios() -> None:
    cases = {(c.name, c.reference_name): c for c in cases_of(three_rounds(), 3)}
    write = cases[(SEQ_WRITE, "native")]
    assert write.paired.values == pytest.approx((0.85, 0.85, 0.7))
    assert write.paired.median == pytest.approx(0.85)
    # The ratio of medians (850 / 1000) would hide the spread of round 3.
    assert (write.met, write.rounds_met) == (True, 2)
    read = cases[(SEQ_READ, "native")]
    assert read.paired.median == pytest.approx(0.7)
    assert (read.met, read.rounds_met) == (False, 1)
    assert read.target == ">= 0.80x"


def test_latency_against_native_is_the_median_of_per_round_differences() -> None:
    cases = {(c.name, c.reference_name): c for c in cases_of(three_rounds(), 3)}
    write = cases[(SMALL_WRITE, "native")]
    assert isinstance(write.paired, PairedDifferences)
    assert write.paired.values == pytest.approx((30, 50, 50))
    assert (write.paired.median, write.met, write.rounds_met) == (50, False, 1)
    read = cases[(SMALL_READ, "native")]
    assert read.paired.values == pytest.approx((50, 20, 20))
    assert (read.paired.median, read.met, read.rounds_met) == (20, True, 2)
    assert read.target == "<= +40 us"


def test_the_local_disk_is_a_ratio_without_a_target() -> None:
    cases = {(c.name, c.reference_name): c for c in cases_of(three_rounds(), 3)}
    small = cases[(SMALL_WRITE, "local disk")]
    assert small.paired.values == pytest.approx((230 / 50, 10.0, 5.0))
    assert (small.target, small.met, small.rounds_met) == (None, None, None)


def test_json_names_sides_order_and_paired_figures() -> None:
    cases = {(c.name, c.reference_name): c for c in cases_of(three_rounds(), 3)}
    native = cases[(SMALL_READ, "native")].to_dict()
    assert native["compared_by"] == "difference"
    assert native["paired"] == {
        "rounds": 3, "median": 20.0, "min": 20.0, "max": 50.0, "q1": 20.0, "q3": 35.0,
        "per_round": [50.0, 20.0, 20.0],
    }  # fmt: skip
    assert (native["mount"], native["reference"]) == (200.0, 160.0)
    assert native["mount_side"] == "fio psync direct=1 (O_DIRECT), 1 job, QD1"
    assert native["reference_side"].startswith("run_phase, 1 rank, QD1")
    # Native first in even rounds, the mount before it in odd ones.
    assert [r["first"] for r in native["rounds"]] == ["native", "mount", "native"]
    disk = cases[(SEQ_WRITE, "local disk")].to_dict()
    assert disk["compared_by"] == "ratio"
    assert [r["first"] for r in disk["rounds"]] == ["mount", "local disk", "mount"]
    assert disk["paired"]["per_round"] == [0.425, 0.2, 0.5]


def test_default_is_seven_rounds() -> None:
    assert MountBenchSettings().rounds == 7


@pytest.mark.parametrize("value", ["-1", "1001"])
def test_a_session_spin_out_of_bounds_is_refused_naming_the_option(value: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "bench", "mount", "--session-spin", value],
        capture_output=True, text=True, env=environment(), timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--session-spin" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.timeout(600)
@needs_mount
def test_a_real_run_reports_every_pair(tmp_path: Path) -> None:
    args = ["bench", "mount", "--dir", str(tmp_path), "--rounds", "2", "--json"]
    args += ["--seq-size", "4MiB", "--small-ops", "100", "--session-spin", "50"]
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", *args],
        capture_output=True, text=True, env=environment(), timeout=560,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["settings"]["rounds"] == 2
    assert report["settings"]["session_spin_us"] == 50
    counts = "\n".join(report["mount_counts"])
    assert "requests served on the session thread" in counts, counts
    assert "session spins found the next request" in counts, counts
    assert len(report["load_average"]["start"]) == 3
    cases = report["cases"]
    assert [(c["name"], c["reference_name"]) for c in cases] == [
        (p.name, reference) for reference in ("native", "local disk") for p in PATTERNS
    ]
    for case in cases:
        assert len(case["rounds"]) == 2 and case["paired"]["rounds"] == 2
        assert all(r["mount"] > 0 and r["reference"] > 0 for r in case["rounds"])
        by_difference = case["unit"] == "us" and case["reference_name"] == "native"
        assert case["compared_by"] == ("difference" if by_difference else "ratio")
        assert (case["met"] is None) == (case["reference_name"] == "local disk")
    assert not list(tmp_path.iterdir()), "the benchmark left files behind"
