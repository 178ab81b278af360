"""Stragglers from per-node iostat series, on hand-computed inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.stats.stragglers import find_stragglers, iostat_over_time

S = 1_000_000_000


def _samples(node: str, w_await: list[float], *, r_await: float = 1.0) -> pd.DataFrame:
    n = len(w_await)
    return pd.DataFrame(
        {
            "node": node,
            "device": "vda",
            "time_ns": [i * 5 * S for i in range(n)],
            "r/s": 100.0,
            "w/s": 50.0,
            "r_await_ms": r_await,
            "w_await_ms": w_await,
            "util": 40.0,
        }
    )


def test_buckets_weight_await_by_requests() -> None:
    frame = pd.DataFrame(
        {
            "node": "a",
            "time_ns": [0, 2 * S, 11 * S],
            "r/s": [10.0, 30.0, 0.0],
            "w/s": [0.0, 0.0, 5.0],
            "r_await_ms": [4.0, 8.0, 0.0],
            "w_await_ms": [0.0, 0.0, 3.0],
            "util": [10.0, 30.0, 50.0],
        }
    )
    table = iostat_over_time(frame, bucket_s=10)
    assert table["t_start_s"].tolist() == [0.0, 10.0]
    # (10*4 + 30*8) / 40 = 7; no reads in the second bucket.
    assert table["r_await_ms"].iloc[0] == pytest.approx(7.0)
    assert np.isnan(table["r_await_ms"].iloc[1])
    assert table["w_await_ms"].iloc[1] == pytest.approx(3.0)
    assert table["util"].tolist() == [20.0, 50.0]


def test_a_node_turning_slow_mid_run_is_named_with_when() -> None:
    healthy = [2.0] * 8
    turning = [2.0] * 4 + [200.0] * 4  # slow from t+20 s (samples every 5 s)
    frame = pd.concat([_samples("n0", healthy), _samples("n1", healthy), _samples("n2", turning)])
    result = find_stragglers(iostat_over_time(frame, bucket_s=10)).set_index("node")
    assert result.loc["n0", "pattern"] == "none"
    assert result.loc["n1", "verdict"] == "ok"
    row = result.loc["n2"]
    # Slow from t+20 s to the end: an onset, never "passing".
    assert row["pattern"] == "onset"
    assert row["first_slow_s"] == 20.0
    assert row["slow_buckets"] == 2 and row["buckets"] == 4
    assert row["worst_metric"] == "w_await"
    assert row["worst_ms"] == pytest.approx(200.0)
    assert row["others_ms"] == pytest.approx(2.0)
    assert "slow from t+20 s to the end" in row["verdict"]


def test_slow_all_along_is_constant_and_a_uniformly_slow_cluster_is_not_a_straggler() -> None:
    frame = pd.concat(
        [_samples("n0", [3.0] * 6), _samples("n1", [3.0] * 6), _samples("n2", [90.0] * 6)]
    )
    result = find_stragglers(iostat_over_time(frame)).set_index("node")
    assert result.loc["n2", "pattern"] == "whole"
    assert "slow from the start to the end" in str(result.loc["n2", "verdict"])
    # Everyone equally slow: beyond the limit, but not an outlier.
    uniform = pd.concat([_samples(f"n{i}", [90.0] * 6) for i in range(3)])
    assert set(find_stragglers(iostat_over_time(uniform))["pattern"]) == {"none"}


def test_an_outlier_below_the_absolute_limit_is_kept() -> None:
    # 6x the others, but 6 ms is a healthy disk.
    frame = pd.concat(
        [_samples("n0", [1.0] * 4), _samples("n1", [1.0] * 4), _samples("n2", [6.0] * 4)]
    )
    assert set(find_stragglers(iostat_over_time(frame))["pattern"]) == {"none"}
