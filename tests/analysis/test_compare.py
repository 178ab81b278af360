"""Comparing two runs: change per phase and metric, configuration differences."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from analysis_support import build_run

from analysis.compare import (
    NO_ESTIMATE_RUN,
    Method,
    compare_runs,
    compare_sets,
    comparison_json,
    config_diff,
)
from analysis.errors import MissingDataError
from analysis.loaders.run import RunData, load_run


def test_compare_two_runs(tmp_path: Path, iostat_text: str, fio_text: str) -> None:
    a = build_run(tmp_path / "a", iostat_text, fio_text, slow_nodes=(3,), bw=1000.0)
    b = build_run(
        tmp_path / "b", iostat_text, fio_text, slow_nodes=(),
        config={"storage": {"fsync": "per_write", "direct": True},
                "workload": {"transfer_size": "1MiB"}},
        bw=1500.0,
    )  # fmt: skip
    comparison = compare_runs(load_run(a), load_run(b))
    metrics = comparison.metrics.set_index(["phase", "metric"])
    write_bw = metrics.loc[("write", "bwMeanMIB")]
    assert write_bw["A"] == 1000.0 and write_bw["B"] == 1500.0
    assert write_bw["change_pct"] == pytest.approx(50.0)
    # summaries without per-repetition rows: one value per run, no noise estimate
    assert write_bw["verdict"] == "no noise estimate (1 repetition)"
    slow = metrics.loc[("engine", "slow nodes (count)")]
    assert slow["A"] == 1 and slow["B"] == 0 and slow["change_pct"] == pytest.approx(-100.0)
    assert metrics.loc[("engine read", "p99_ms"), "change_pct"] < -90
    # columns beyond IOR's main figures are compared too
    assert metrics.loc[("read", "latency_p99_s"), "A"] == 2.5
    assert comparison.config_diff.to_dict("records") == [
        {"key": "storage.fsync", "A": "on_close", "B": "per_write"}
    ]


def test_config_diff_ignores_times_and_shows_absent_keys() -> None:
    diff = config_diff({"a": 1, "start_time": 5, "n": {"x": 1}}, {"a": 1, "start_time": 6, "y": 2})
    assert diff.to_dict("records") == [
        {"key": "n.x", "A": "1", "B": "-"},
        {"key": "y", "A": "-", "B": "2"},
    ]


def _run(name: str, bandwidths: list[float], p99_us: list[float], **manifest: object) -> RunData:
    """A run as frames: per-repetition rows of a write and a read phase."""
    rows = [
        {"phase": phase, "repetition": index, "bwMiB": bw * scale, "iops": bw * scale * 16,
         "wrRdTime": 64 / (bw * scale), "p50_us": p99 / 4, "p99_us": p99, "errors": 0}
        for phase, scale in (("write", 1.0), ("read", 2.0))
        for index, (bw, p99) in enumerate(zip(bandwidths, p99_us, strict=True))
    ]  # fmt: skip
    repetitions = pd.DataFrame(rows)
    workload = pd.DataFrame(
        [{"phase": phase, "bwMeanMIB": repetitions[repetitions["phase"] == phase]["bwMiB"].mean(),
          "errors": 0} for phase in ("write", "read")]
    )  # fmt: skip
    return RunData(
        path=Path(name),
        manifest={"label": name, "effective_config": {"workload": {"repetitions": 5}}, **manifest},
        workload=workload,
        repetitions=repetitions if len(bandwidths) > 1 else None,
    )


BW = [100.0, 104.0, 97.0, 101.0, 99.0]
P99 = [900.0, 950.0, 870.0, 1010.0, 930.0]


def test_repetitions_give_intervals_tests_and_verdicts() -> None:
    slow = [value / 8 for value in BW]
    comparison = compare_runs(_run("a", BW, P99), _run("b", slow, P99[::-1]))
    metrics = comparison.metrics.set_index(["phase", "metric"])
    for phase in ("write", "read"):
        bw = metrics.loc[(phase, "bwMeanMIB")]
        assert bw["verdict"] == "changed" and bw["direction"] == "worse"
        assert bw["change_pct"] == pytest.approx(-87.5)
        assert bw["ci_low_pct"] <= bw["change_pct"] <= bw["ci_high_pct"] < 0
        assert bw["test"] == "Mann-Whitney U (exact)" and bw["p_value"] == pytest.approx(2 / 252)
        assert (bw["n_A"], bw["n_B"]) == (5, 5)
        time = metrics.loc[(phase, "MeanTime")]
        assert time["verdict"] == "changed" and time["direction"] == "worse"
        p99 = metrics.loc[(phase, "p99_us")]  # the same values in another order
        assert p99["verdict"] == "within noise" and p99["direction"] == ""
        assert p99["ci_low_pct"] < 0 < p99["ci_high_pct"] and p99["p_value"] == 1.0
        # totals exist once per run: shown, with no verdict
        assert metrics.loc[(phase, "errors"), "verdict"] == NO_ESTIMATE_RUN
    # bandwidth, OPs, time, p50 and p99 per phase; the first three changed
    assert comparison.tested() == 10 and len(comparison.changed()) == 6
    assert "10 rows tested at 95%" in comparison.chance_note()
    samples = comparison.samples
    assert sorted(samples[(samples["metric"] == "bwMeanMIB") & (samples["run"] == "A")]
                  ["value"].head(5)) == sorted(BW)  # fmt: skip


def test_one_repetition_says_no_noise_estimate() -> None:
    comparison = compare_runs(_run("a", [100.0], [900.0]), _run("b", [150.0], [800.0]))
    rows = comparison.metrics.set_index(["phase", "metric"])
    assert rows.loc[("write", "bwMeanMIB"), "verdict"] == "no noise estimate (1 repetition)"
    assert rows.loc[("write", "bwMeanMIB"), "change_pct"] == pytest.approx(50.0)
    assert comparison.tested() == 0 and comparison.changed().empty


def test_comparison_is_reproducible_and_json_ready() -> None:
    a, b = _run("a", BW, P99), _run("b", [x * 1.02 for x in BW[::-1]], P99)
    first = comparison_json(compare_runs(a, b))
    assert json.dumps(first) == json.dumps(comparison_json(compare_runs(a, b)))
    row = next(r for r in first["metrics"] if (r["phase"], r["metric"]) == ("read", "bwMeanMIB"))
    assert row["verdict"] in ("changed", "within noise")
    assert row["ci_pct"][0] <= row["change_pct"] <= row["ci_pct"][1]
    assert row["confidence"] == 0.95 and isinstance(row["reps_needed"], int | None)
    assert first["method"]["seed"] == 0 and first["method"]["rank_test_minimum_repetitions"] == 4
    errors = next(r for r in first["metrics"] if r["metric"] == "errors")
    assert errors["ci_pct"] == [None, None] and errors["p_value"] is None


def test_a_stricter_confidence_is_used_throughout() -> None:
    comparison = compare_runs(_run("a", BW, P99), _run("b", [x * 1.03 for x in BW], P99),
                              method=Method(confidence=0.99))  # fmt: skip
    assert "99% bootstrap" in " ".join(comparison.method.describe())
    # 5 against 5 reaches p = 0.0079 at best: still possible at 99 %
    assert comparison.metrics["test"].isin(["Mann-Whitney U (exact)", ""]).all()


def _point(name: str, values: dict[str, object], bandwidths: list[float]) -> RunData:
    return _run(name, bandwidths, P99, sweep={"index": 0, "count": 2, "values": values})


def test_sweeps_are_compared_point_by_point() -> None:
    sweep_a = [_point("a0", {"workload.transfer_size": 65536}, BW),
               _point("a1", {"workload.transfer_size": 1048576}, BW)]  # fmt: skip
    sweep_b = [_point("b1", {"workload.transfer_size": 1048576}, [x / 4 for x in BW]),
               _point("b2", {"workload.transfer_size": 4194304}, BW),
               _point("b0", {"workload.transfer_size": 65536}, BW)]  # fmt: skip
    comparison = compare_sets(sweep_a, sweep_b)
    assert list(comparison.metrics.columns[:3]) == ["point", "phase", "metric"]
    bw = comparison.metrics[comparison.metrics["metric"] == "bwMeanMIB"].set_index(
        ["point", "phase"]
    )
    assert bw.loc[("workload.transfer_size=1048576", "write"), "verdict"] == "changed"
    assert bw.loc[("workload.transfer_size=65536", "write"), "verdict"] == "within noise"
    assert comparison.notes == ["only in B: workload.transfer_size=4194304"]
    assert set(comparison.samples["point"]) == {
        "workload.transfer_size=65536", "workload.transfer_size=1048576",
    }  # fmt: skip


def test_sweep_sets_need_one_run_per_point_and_a_point_in_common() -> None:
    twice = [_point("x", {"k": 1}, BW), _point("y", {"k": 1}, BW)]
    with pytest.raises(MissingDataError, match="A: two runs of the point 'k=1': x and y"):
        compare_sets(twice, [_point("z", {"k": 1}, BW)])
    with pytest.raises(MissingDataError, match="no sweep point in common"):
        compare_sets([_point("x", {"k": 1}, BW)], [_point("z", {"k": 2}, BW)])


def test_a_phase_one_target_could_not_run_is_shown_untested() -> None:
    """A directory rename on a posix: directory beside BenchFS, which refuses it:
    the row has the one side's figure, no verdict, and counts as no test."""

    def run(name: str, rates: list[float] | None) -> RunData:
        repetitions = pd.DataFrame(
            [{"phase": "Directory stat", "repetition": i, "rate_ops_s": 100.0 + i, "time_s": 1.0}
             for i in range(3)]
            + [{"phase": "Directory rename", "repetition": i, "rate_ops_s": rate, "time_s": 1.0}
               for i, rate in enumerate(rates or [])]
        )  # fmt: skip
        workload = pd.DataFrame([
            {"phase": "Directory stat", "kind": "metadata", "rate_mean_ops_s": 101.0},
            {"phase": "Directory rename", "kind": "metadata",
             "rate_mean_ops_s": sum(rates) / len(rates) if rates else None},
        ])  # fmt: skip
        return RunData(path=Path(name), manifest={"label": name}, workload=workload,
                       repetitions=repetitions)  # fmt: skip

    comparison = compare_runs(run("mount", None), run("disk", [50.0, 60.0, 70.0]))
    rows = comparison.metrics.set_index(["phase", "metric"])
    rename = rows.loc[("Directory rename", "rate_mean_ops_s")]
    assert pd.isna(rename["A"]) and rename["B"] == 60.0
    assert rename["verdict"] == NO_ESTIMATE_RUN
    assert rows.loc[("Directory stat", "rate_mean_ops_s"), "n_A"] == 3
    assert comparison.tested() == 2  # the stat phase's rate and time
