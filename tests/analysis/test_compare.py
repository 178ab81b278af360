"""Comparing two runs: change per phase and metric, configuration differences."""

from __future__ import annotations

from pathlib import Path

import pytest
from analysis_support import build_run

from analysis.compare import compare_runs, config_diff
from analysis.loaders.run import load_run


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
