"""The arithmetic of paired rounds and how a storage report carries it."""

from __future__ import annotations

import pytest

from benchfs.bench.paired import PairedRatios
from benchfs.bench.storage import CaseResult, Round, Setup, Side, StorageBenchReport


def test_ratios_pair_round_by_round() -> None:
    paired = PairedRatios.of([90.0, 200.0, 50.0], [100.0, 100.0, 100.0])
    assert paired.ratios == (0.9, 2.0, 0.5)
    assert paired.rounds == 3
    assert paired.median == 0.9
    assert (paired.low, paired.high) == (0.5, 2.0)


def test_median_of_ratios_is_not_ratio_of_medians() -> None:
    # Round 2 is slow for both sides: paired, it is a ratio of 1 like the others.
    paired = PairedRatios.of([100.0, 10.0, 100.0, 100.0], [100.0, 10.0, 100.0, 110.0])
    assert paired.median == pytest.approx(1.0)
    assert paired.low == pytest.approx(100 / 110)


def test_quartiles_stay_within_the_observed_range() -> None:
    paired = PairedRatios.of([1.0, 2.0, 3.0, 4.0, 5.0], [1.0] * 5)
    assert paired.quartiles == (2.0, 4.0)
    one = PairedRatios.of([3.0], [2.0])
    assert one.quartiles == (1.5, 1.5)


def test_zero_denominator_gives_zero_not_an_error() -> None:
    assert PairedRatios.of([5.0], [0.0]).ratios == (0.0,)


def test_unequal_sides_are_refused() -> None:
    with pytest.raises(ValueError, match="as many of each side, got 2 and 1"):
        PairedRatios.of([1.0, 2.0], [1.0])


def _side(mibps: float) -> Side:
    return Side(MiBps=mibps, iops=mibps * 256, p50_us=500.0, p99_us=900.0)


def test_report_json_carries_rounds_spread_and_setups() -> None:
    engine = Setup("engine", "io_uring SINGLE_ISSUER|DEFER_TASKRUN, fixed buffers", 32, True)
    fio = Setup("fio-3.33", "ioengine=io_uring", 32, True)
    rounds = [
        Round(_side(e), _side(f), 1.5, engine_first=i % 2 == 0)
        for i, (e, f) in enumerate([(100.0, 125.0), (90.0, 100.0), (120.0, 100.0)])
    ]
    report = StorageBenchReport(
        directory="/d",
        cases=[CaseResult("rand_read_4KiB", rounds, engine, fio)],
        trace_overhead=PairedRatios.of([99.0, 101.0], [100.0, 100.0]),
    )
    case = report.to_json()["cases"][0]
    assert case["ratio"] == 0.9
    assert case["paired_ratio"] == {
        "rounds": 3,
        "median": 0.9,
        "min": 0.8,
        "max": 1.2,
        "q1": 0.85,
        "q3": 1.05,
        "per_round": [0.8, 0.9, 1.2],
    }
    assert [r["first"] for r in case["rounds"]] == ["engine", "fio", "engine"]
    # Each side shows its median round by throughput.
    assert (case["engine_MiBps"], case["fio_MiBps"]) == (100.0, 100.0)
    assert case["engine_setup"] == {
        "tool": "engine",
        "ioengine": "io_uring SINGLE_ISSUER|DEFER_TASKRUN, fixed buffers",
        "queue_depth": 32,
        "direct": True,
    }
    assert case["fio_setup"]["tool"] == "fio-3.33"
    assert report.to_json()["trace_overhead_ratio"] == 1.0
    assert report.to_json()["trace_overhead"]["min"] == 0.99
    described = "engine: io_uring SINGLE_ISSUER|DEFER_TASKRUN, fixed buffers, QD 32, O_DIRECT"
    assert engine.describe() == described
