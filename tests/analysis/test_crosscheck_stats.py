"""Engine slow nodes against iostat awaits of the same node and time window."""

from __future__ import annotations

import pandas as pd

from analysis.stats.crosscheck import crosscheck_iostat

MS = 1_000_000
S = 1_000_000_000


def _ops() -> pd.DataFrame:
    rows = []
    for node, read_ms in (("disk", 900.0), ("soft", 900.0), ("ok1", 1.0), ("ok2", 1.0)):
        rows += [(node, "read", read_ms, 100), (node, "write", 2.0, 200)]
    return pd.DataFrame(
        {
            "node": pd.Categorical([r[0] for r in rows]),
            "op": pd.Categorical([r[1] for r in rows]),
            "latency_ns": [int(r[2] * MS) for r in rows],
            "time_ns": [r[3] * S for r in rows],
        }
    )


def _iostat() -> pd.DataFrame:
    rows = [
        # node, time s, r/s, w/s, r_await, w_await
        ("disk", 150, 100.0, 10.0, 800.0, 1.0),
        ("disk", 500, 100.0, 10.0, 0.5, 0.5),  # outside the window: ignored
        ("soft", 150, 100.0, 10.0, 0.6, 1.0),
        ("ok1", 150, 300.0, 10.0, 0.5, 1.0),
        ("ok1", 160, 100.0, 10.0, 0.9, 1.0),
        ("ok2", 150, 100.0, 10.0, 0.5, 1.0),
    ]
    return pd.DataFrame(
        {
            "node": [r[0] for r in rows],
            "time_ns": [r[1] * S for r in rows],
            "r/s": [r[2] for r in rows],
            "w/s": [r[3] for r in rows],
            "r_await_ms": [r[4] for r in rows],
            "w_await_ms": [r[5] for r in rows],
        }
    )


def test_verdicts() -> None:
    table = crosscheck_iostat(_ops(), _iostat(), slow_nodes=["disk", "soft"]).set_index("node")
    assert table.loc["disk", "iostat_samples"] == 1
    assert table.loc["disk", "r_await_ms"] == 800.0
    assert table.loc["disk", "engine_read_mean_ms"] == 900.0
    assert bool(table.loc["disk", "disk_slow"]) is True
    assert table.loc["disk", "verdict"].startswith("disk slow too")
    assert bool(table.loc["soft", "disk_slow"]) is False
    assert table.loc["soft", "verdict"].startswith("disk normal")
    # r_await weighted by reads per second: (0.5*300 + 0.9*100) / 400
    assert table.loc["ok1", "r_await_ms"] == (0.5 * 300 + 0.9 * 100) / 400
    assert table.loc["ok1", "verdict"] == "ok"


def test_node_without_iostat_and_samples_without_time() -> None:
    iostat = _iostat()
    iostat = iostat[iostat["node"] != "ok2"].drop(columns="time_ns")
    table = crosscheck_iostat(_ops(), iostat, slow_nodes=["disk"]).set_index("node")
    assert table.loc["ok2", "verdict"] == "no iostat samples in the window"
    # without times every sample of the node counts: (800 + 0.5) / 2
    assert table.loc["disk", "iostat_samples"] == 2
    assert table.loc["disk", "r_await_ms"] == (800.0 + 0.5) / 2
