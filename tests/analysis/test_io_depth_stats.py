"""io_depth statistics against hand-computed values."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis.errors import MissingDataError
from analysis.stats.io_depth import (
    batching_warning,
    io_depth_by_node,
    io_depth_histogram,
    io_depth_over_time,
    io_depth_summary,
)

S = 1_000_000_000


def _submits() -> pd.DataFrame:
    # node a: depths 1, 1, 1, 5 ; node b: 2, 600
    return pd.DataFrame(
        {
            "time_ns": [0, 1 * S, 12 * S, 13 * S, 2 * S, 25 * S],
            "node": pd.Categorical(["a", "a", "a", "a", "b", "b"]),
            "sqes": [1, 1, 1, 5, 2, 600],
            "in_flight": [1, 2, 3, 6, 4, 620],
        }
    )


def test_summary() -> None:
    summary = io_depth_summary(_submits())
    assert summary.submits == 6
    assert summary.mean == pytest.approx(610 / 6)
    assert summary.median == pytest.approx(1.5)  # sorted 1 1 1 2 5 600
    assert summary.std == pytest.approx(pd.Series([1, 1, 1, 5, 2, 600]).std(ddof=0))
    assert summary.max == 600
    assert summary.depth1_pct == pytest.approx(50.0)
    assert summary.mean_in_flight == pytest.approx(636 / 6)
    assert summary.max_in_flight == 620
    # p90 with linear interpolation: rank 0.9*5 = 4.5 between 5 and 600
    assert summary.p90 == pytest.approx(5 + 0.5 * 595)


def test_histogram_buckets() -> None:
    table = io_depth_histogram(_submits()).set_index("io_depth")
    assert list(table.index) == ["1", "2-4", "5-8", "9-16", "17-32", "33-64", "65-128",
                                 "129-512", ">512"]  # fmt: skip
    assert table.loc["1", "submits"] == 3
    assert table.loc["2-4", "submits"] == 1
    assert table.loc["5-8", "submits"] == 1
    assert table.loc[">512", "submits"] == 1
    assert table.loc["129-512", "submits"] == 0
    assert table["share_pct"].sum() == pytest.approx(100.0)
    assert table.loc["1", "share_pct"] == pytest.approx(50.0)


def test_bucket_edges_are_inclusive_as_labelled() -> None:
    frame = pd.DataFrame({"sqes": [4, 8, 16, 32, 64, 128, 512, 513]})
    table = io_depth_histogram(frame).set_index("io_depth")["submits"]
    assert table.to_dict() == {"1": 0, "2-4": 1, "5-8": 1, "9-16": 1, "17-32": 1, "33-64": 1,
                               "65-128": 1, "129-512": 1, ">512": 1}  # fmt: skip


def test_by_node() -> None:
    table = io_depth_by_node(_submits()).set_index("node")
    assert table.loc["a", "submits"] == 4
    assert table.loc["a", "mean_sqes"] == pytest.approx(2.0)
    assert table.loc["a", "p50_sqes"] == pytest.approx(1.0)
    assert table.loc["a", "depth1_pct"] == pytest.approx(75.0)
    assert table.loc["b", "max_sqes"] == 600
    assert table.loc["b", "mean_in_flight"] == pytest.approx(312.0)


def test_over_time_in_ten_second_buckets() -> None:
    table = io_depth_over_time(_submits(), start_ns=0, bucket_s=10)
    rows = {(r.node, r.t_start_s): (r.submits, r.mean_sqes) for r in table.itertuples()}
    assert rows == {("a", 0.0): (2, 1.0), ("a", 10.0): (2, 3.0), ("b", 0.0): (1, 2.0),
                    ("b", 20.0): (1, 600.0)}  # fmt: skip


def test_warning_when_busy_but_unbatched() -> None:
    busy = pd.DataFrame({"sqes": [1] * 99 + [2], "in_flight": [16] * 100})
    warning = batching_warning(io_depth_summary(busy))
    assert warning is not None and "batching is absent" in warning and "1.01" in warning
    batched = pd.DataFrame({"sqes": [4] * 10, "in_flight": [16] * 10})
    assert batching_warning(io_depth_summary(batched)) is None
    idle = pd.DataFrame({"sqes": [1] * 10, "in_flight": [1] * 10})
    assert batching_warning(io_depth_summary(idle)) is None


def test_empty_and_renamed_inputs() -> None:
    empty = io_depth_summary(pd.DataFrame({"sqes": [], "in_flight": []}))
    assert empty.submits == 0 and math.isnan(empty.mean)
    with pytest.raises(MissingDataError, match="sqes"):
        io_depth_summary(pd.DataFrame({"batch": [1], "in_flight": [1]}))
