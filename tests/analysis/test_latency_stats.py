"""Latency per op, buckets, per node and over time, against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.stats.latency import bimodal_hints, latency_buckets, latency_by_op
from analysis.stats.nodes import (
    flag_slow_nodes,
    node_latency_over_time,
    node_latency_table,
    slow_node_persistence,
)

MS = 1_000_000
S = 1_000_000_000


def _ops(rows: list[tuple[str, str, float, float]]) -> pd.DataFrame:
    """(node, op, latency ms, time s) rows."""
    return pd.DataFrame(
        {
            "node": pd.Categorical([r[0] for r in rows]),
            "op": pd.Categorical([r[1] for r in rows]),
            "latency_ns": [int(r[2] * MS) for r in rows],
            "time_ns": [int(r[3] * S) for r in rows],
            "status": [0] * len(rows),
            "bytes": [4096] * len(rows),
        }
    )


def test_latency_by_op() -> None:
    ops = _ops([("a", "read", v, 0) for v in (1, 2, 3, 4, 100)] + [("a", "write", 0.5, 0)])
    ops.loc[5, "status"] = -5
    table = latency_by_op(ops).set_index("op")
    read = table.loc["read"]
    assert read["count"] == 5
    assert read["mean_ms"] == pytest.approx(22.0)
    assert read["p50_ms"] == pytest.approx(3.0)
    assert read["p95_ms"] == pytest.approx(4 + 0.8 * 96)  # rank 3.8
    assert read["p99_ms"] == pytest.approx(4 + 0.96 * 96)
    assert read["p99.9_ms"] == pytest.approx(4 + 0.996 * 96)
    assert read["max_ms"] == pytest.approx(100.0)
    assert read["errors"] == 0
    assert table.loc["write", "errors"] == 1


def test_buckets_match_the_field_report_ranges() -> None:
    values = [0.05, 0.1, 0.3, 0.7, 2, 7, 20, 70, 100, 150]  # ms
    table = latency_buckets(_ops([("a", "read", v, 0) for v in values])).set_index("bucket")
    assert list(table.index) == ["0-100 us", "100-500 us", "0.5-1 ms", "1-5 ms", "5-10 ms",
                                 "10-50 ms", "50-100 ms", ">100 ms"]  # fmt: skip
    # buckets are closed on the right: exactly 100 ms is not "over 100 ms"
    expected = [20, 10, 10, 10, 10, 10, 20, 10]
    assert table["read_pct"].tolist() == pytest.approx(expected)
    assert table["all_pct"].tolist() == pytest.approx(expected)


def test_bimodal_hint_when_mean_and_median_diverge() -> None:
    skewed = _ops([("a", "read", 0.65, 0)] * 8 + [("a", "read", 20_000, 0)] * 2)
    (hint,) = bimodal_hints(latency_by_op(skewed))
    # A mean of seconds prints whole, never as an exponent.
    assert hint.startswith("read: mean 4,001 ms is ") and "the median 0.65 ms" in hint
    even = _ops([("a", "read", v, 0) for v in (1, 1.1, 0.9)])
    assert bimodal_hints(latency_by_op(even)) == []


def _cluster() -> pd.DataFrame:
    rows = []
    # healthy node h: reads 1 ms, writes 2 ms, 10 s apart
    for t in range(0, 40, 10):
        rows += [("h", "read", 1.0, t), ("h", "write", 2.0, t)]
    # sick node s: reads 500 ms the whole run, writes 2 ms
    for t in range(0, 40, 10):
        rows += [("s", "read", 500.0, t), ("s", "write", 2.0, t)]
    # node p: slow only in its first bucket
    rows += [("p", "read", 300.0, 0), ("p", "read", 1.0, 10), ("p", "read", 1.0, 20),
             ("p", "read", 1.0, 30)]  # fmt: skip
    return _ops(rows)


def test_node_table() -> None:
    table = node_latency_table(_cluster())
    assert list(table["node"]) == ["s", "p", "h"]  # worst first
    s = table.set_index("node").loc["s"]
    assert s["ops"] == 8 and s["slow_ops"] == 4
    assert s["slow_pct"] == pytest.approx(50.0)
    assert s["mean_ms"] == pytest.approx(251.0)
    assert s["read_ops"] == 4 and s["write_ops"] == 4
    assert s["read_mean_ms"] == pytest.approx(500.0)
    assert s["read_write_ratio"] == pytest.approx(250.0)
    p = table.set_index("node").loc["p"]
    assert p["write_ops"] == 0 and math.isnan(p["read_write_ratio"])
    h = table.set_index("node").loc["h"]
    assert h["slow_ops"] == 0 and h["read_write_ratio"] == pytest.approx(0.5)
    assert flag_slow_nodes(table) == ["s", "p"]


def test_threshold_is_a_parameter() -> None:
    table = node_latency_table(_cluster(), slow_ms=1000).set_index("node")
    assert table["slow_ops"].sum() == 0


def test_over_time_and_persistence() -> None:
    over_time = node_latency_over_time(_cluster(), start_ns=0, bucket_s=10)
    s0 = over_time[(over_time["node"] == "s") & (over_time["t_start_s"] == 0)].iloc[0]
    assert s0["ops"] == 2 and s0["slow_ops"] == 1 and s0["slow_pct"] == pytest.approx(50.0)
    assert s0["mean_ms"] == pytest.approx(251.0) and s0["max_ms"] == pytest.approx(500.0)
    persistence = slow_node_persistence(over_time).set_index("node")
    assert persistence.loc["s", "pattern"] == "whole"
    assert persistence.loc["s", "slow_buckets"] == 4
    # Slow in its first bucket only: recovered, said with its span.
    assert persistence.loc["p", "pattern"] == "recovered"
    assert persistence.loc["p", "when"] == "slow t+0 s to t+10 s, then recovered"
    assert persistence.loc["p", "first_slow_s"] == 0 and persistence.loc["p", "last_slow_s"] == 0
    assert persistence.loc["h", "pattern"] == "none"
    assert np.isnan(persistence.loc["h", "first_slow_s"])


def test_over_time_for_one_op() -> None:
    reads = node_latency_over_time(_cluster(), start_ns=0, bucket_s=20, op="read")
    s0 = reads[(reads["node"] == "s") & (reads["t_start_s"] == 0)].iloc[0]
    assert s0["ops"] == 2 and s0["slow_pct"] == pytest.approx(100.0)


def test_mean_far_above_the_rest_flags_a_node_without_slow_ops() -> None:
    rows = [(f"n{i}", "read", 1.0, 0) for i in range(5)] + [("x", "read", 50.0, 0)]
    assert flag_slow_nodes(node_latency_table(_ops(rows))) == ["x"]


def test_a_few_slow_ops_on_a_node_with_a_typical_mean_are_noise() -> None:
    # 2% of its ops over 100 ms, mean 1.8 times the others': a loaded machine.
    rows = [(f"n{i}", "write", 3.4, 0) for i in range(3) for _ in range(100)]
    rows += [("busy", "write", 3.6, 0)] * 98 + [("busy", "write", 120.0, 0)] * 2
    assert flag_slow_nodes(node_latency_table(_ops(rows))) == []
    # The same share with a mean three times the others' is a sick node.
    rows = [(f"n{i}", "write", 3.4, 0) for i in range(3) for _ in range(100)]
    rows += [("sick", "write", 9.0, 0)] * 98 + [("sick", "write", 150.0, 0)] * 2
    assert flag_slow_nodes(node_latency_table(_ops(rows))) == ["sick"]


def test_pair_positions_are_pandas_groups_in_category_order() -> None:
    from analysis.stats._common import group_positions, pair_positions

    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {
            "node": pd.Categorical(rng.choice(["b", "a", "c"], 500), categories=["c", "b", "a"]),
            "op": pd.Categorical(rng.choice(["read", "write", None], 500)),
        }
    )
    expected = frame.groupby(["node", "op"], observed=True, sort=True).indices
    found = pair_positions(frame["node"], frame["op"])
    assert list(found) == list(expected)  # rows with a missing op are in no pair
    for key, rows in expected.items():
        assert found[key].tolist() == rows.tolist()
    by_node = frame.groupby("node", observed=True, sort=True).indices
    assert {k: v.tolist() for k, v in group_positions(frame["node"]).items()} == {
        k: v.tolist() for k, v in by_node.items()
    }
