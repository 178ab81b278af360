"""RPC phases, retries, concurrency and load per target against hand-computed values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.stats.rpc import (
    concurrency,
    imbalance,
    rpc_in_flight,
    rpc_load_by_target,
    rpc_phases,
    rpc_retries,
)

MS = 1_000_000


def _client() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "node": pd.Categorical(["c"] * 4),
            "pid": [1, 1, 1, 1],
            "peer": pd.Categorical(["s1", "s1", "s1", "s2"]),
            "time_ns": [10 * MS, 20 * MS, 30 * MS, 30 * MS],
            "bytes": [100, 100, 100, 700],
            "retries": [0, 0, 2, 1],
            "status": [0, 0, 0, -110],
            "send_ns": [1 * MS, 1 * MS, 1 * MS, 1 * MS],
            "wait_ns": [8 * MS, 8 * MS, 8 * MS, 28 * MS],
            "total_ns": [10 * MS, 10 * MS, 10 * MS, 30 * MS],
        }
    )


def _server() -> pd.DataFrame:
    return pd.DataFrame(
        {"queue_ns": [0, 2 * MS], "storage_ns": [4 * MS, 6 * MS], "reply_ns": [MS, MS]}
    )


def test_phases() -> None:
    table = rpc_phases(_client(), _server()).set_index("phase")
    assert list(table.index) == ["client send", "client wait", "client total", "server queue",
                                 "server storage", "reply"]  # fmt: skip
    assert table.loc["client total", "count"] == 4
    assert table.loc["client total", "mean_ms"] == pytest.approx(15.0)
    assert table.loc["client total", "p50_ms"] == pytest.approx(10.0)
    assert table.loc["client total", "max_ms"] == pytest.approx(30.0)
    assert table.loc["server queue", "mean_ms"] == pytest.approx(1.0)
    assert table.loc["server storage", "p50_ms"] == pytest.approx(5.0)
    only_server = rpc_phases(None, _server())
    assert list(only_server["phase"]) == ["server queue", "server storage", "reply"]


def test_retries() -> None:
    summary = rpc_retries(_client())
    assert summary.rpcs == 4
    assert summary.retried_rpcs == 2 and summary.retried_pct == pytest.approx(50.0)
    assert summary.total_retries == 3
    assert summary.failed_rpcs == 1 and summary.failed_pct == pytest.approx(25.0)
    assert summary.failures == ()  # no op column: no breakdown
    named = _client().assign(
        op=pd.Categorical(["unlink", "unlink", "read", "read"]), status=[2, 2, 0, -110]
    )
    assert rpc_retries(named).failures == ("unlink ENOENT x2", "read ETIMEDOUT x1")


def test_concurrency_of_intervals() -> None:
    # [0,10) [5,15) [20,30): two overlap for 5 of 30 time units
    level = concurrency(np.array([0, 5, 20]), np.array([10, 15, 30]))
    assert level.max == 2
    assert level.mean == pytest.approx((5 * 1 + 5 * 2 + 5 * 1 + 5 * 0 + 10 * 1) / 30)
    # back to back does not overlap
    assert concurrency(np.array([0, 10]), np.array([10, 20])).max == 1


def test_in_flight_per_client_process() -> None:
    # RPCs in flight: [0,10) [10,20) [20,30) and the long one [0,30)
    (row,) = rpc_in_flight(_client()).itertuples(index=False)
    assert row.rpcs == 4
    assert row.max_in_flight == 2
    assert row.mean_in_flight == pytest.approx(2.0)


def test_load_per_target_includes_idle_nodes() -> None:
    table = rpc_load_by_target(_client(), all_nodes=["s1", "s2", "s3"]).set_index("target")
    assert table["requests"].to_dict() == {"s1": 3, "s2": 1, "s3": 0}
    assert table["bytes"].to_dict() == {"s1": 300, "s2": 700, "s3": 0}
    assert table.loc["s1", "requests_pct"] == pytest.approx(75.0)
    balance = imbalance(table["requests"])
    assert balance.max_over_mean == pytest.approx(3 / (4 / 3))
    assert balance.cv == pytest.approx(np.std([3, 1, 0]) / (4 / 3))
    assert balance.idle_targets == 1


def test_balanced_load() -> None:
    balance = imbalance(pd.Series([5, 5, 5, 5]))
    assert balance.max_over_mean == pytest.approx(1.0)
    assert balance.cv == pytest.approx(0.0)
    assert balance.idle_targets == 0
