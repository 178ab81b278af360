"""Median/MAD outliers and the exclusion policy on given figures."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchfs.health.policy import Evidence, PolicyMetric, decide_exclusions, minimum_nodes
from benchfs.health.robust import robust_outliers
from benchfs.health.thresholds import Thresholds

READ = PolicyMetric("read_bw_MiB_s", "low", "seq_read_min_MiB_s")
LATENCY = PolicyMetric("read_p99_ns", "high", "rand_read_p99_max_ms", 1e6)


def test_a_slow_node_among_healthy_ones_is_an_outlier_by_how_much() -> None:
    values = {"a": 2000.0, "b": 2100.0, "c": 1900.0, "d": 2050.0, "e": 2000.0, "slow": 5.0}
    (found,) = robust_outliers(values, "read_bw_MiB_s", "low", z_limit=5, min_relative=0.5)
    assert found.node == "slow" and found.median == pytest.approx(2000.0)
    assert found.factor == pytest.approx(5.0 / 2000.0)
    text = found.describe()
    assert "= 5 on slow is 400.0x lower than the median of the other nodes (2,000;" in text
    # The same spread on the good side is not a problem for a bandwidth.
    fast = {**values, "slow": 800_000.0}
    assert robust_outliers(fast, "read_bw_MiB_s", "low", z_limit=5, min_relative=0.5) == []


def test_high_side_metrics_flag_large_values() -> None:
    values = {"a": 1e6, "b": 1.1e6, "c": 0.9e6, "e": 1e6, "d": 40e6}
    (found,) = robust_outliers(values, "p99", "high", z_limit=5, min_relative=0.5)
    assert found.node == "d" and found.factor == pytest.approx(40.0)
    assert "40.0x the median" in found.describe()


def test_fewer_than_three_nodes_give_no_outliers() -> None:
    assert robust_outliers({"a": 1.0, "b": 1000.0}, "m", "low", z_limit=5, min_relative=0.5) == []


def test_identical_nodes_and_small_differences_are_not_outliers() -> None:
    same = {f"n{i}": 1000.0 for i in range(5)}
    assert robust_outliers(same, "m", "low", z_limit=5, min_relative=0.5) == []
    # Tiny MAD, large z, but only 10% away: the relative floor keeps it quiet.
    close = {**same, "n4": 900.0}
    assert robust_outliers(close, "m", "low", z_limit=5, min_relative=0.5) == []


@given(
    st.lists(st.floats(min_value=501, max_value=1000), min_size=3, max_size=20),
)
def test_nodes_within_a_factor_of_two_are_never_outliers(values: list[float]) -> None:
    named = {f"n{i}": v for i, v in enumerate(values)}
    assert robust_outliers(named, "m", "low", z_limit=5, min_relative=0.5) == []
    assert robust_outliers(named, "m", "high", z_limit=5, min_relative=0.5) == []


def test_policy_needs_outlier_and_limit_both_and_records_evidence() -> None:
    thresholds = Thresholds()
    values = {
        "a": {"read_bw_MiB_s": 2000.0, "read_p99_ns": 1e6},
        "b": {"read_bw_MiB_s": 2100.0, "read_p99_ns": 1.1e6},
        "c": {"read_bw_MiB_s": 1900.0, "read_p99_ns": 0.9e6},
        # An outlier, but above the 100 MiB/s floor: kept.
        "half": {"read_bw_MiB_s": 400.0, "read_p99_ns": 1e6},
        # Outlier and below the floor: excluded.
        "sick": {"read_bw_MiB_s": 4.0, "read_p99_ns": 900e6},
    }
    result = decide_exclusions(values, [READ, LATENCY], thresholds)
    assert result.excluded == ("sick",)
    assert result.kept == ("a", "b", "c", "half")
    decision = {d.node: d for d in result.decisions}
    assert {e.metric for e in decision["sick"].evidence} == {"read_bw_MiB_s", "read_p99_ns"}
    assert all(e.beyond_limit for e in decision["sick"].evidence)
    assert "no strong evidence" in decision["half"].reason
    document = json.loads(json.dumps(result.to_dict()))
    assert document["excluded"] == ["sick"]
    assert document["decisions"][4]["evidence"][0]["limit"] in (100.0, 20e6)


def test_policy_never_goes_below_the_minimum_and_says_why() -> None:
    thresholds = Thresholds(min_node_fraction=0.75)
    values = {
        "a": {"read_bw_MiB_s": 2000.0},
        "b": {"read_bw_MiB_s": 2000.0},
        "c": {"read_bw_MiB_s": 2010.0},
        "s1": {"read_bw_MiB_s": 3.0},
        "s2": {"read_bw_MiB_s": 5.0},
    }
    assert minimum_nodes(5, thresholds) == 4
    result = decide_exclusions(values, [READ], thresholds)
    assert result.excluded == ("s1",)  # the worst goes first
    kept = next(d for d in result.decisions if d.node == "s2")
    assert not kept.excluded and "fewer than 4 nodes" in kept.reason and kept.evidence


def test_failed_nodes_are_excluded_with_their_error() -> None:
    values = {"a": {"read_bw_MiB_s": 2000.0}, "b": {"read_bw_MiB_s": 2000.0}}
    result = decide_exclusions(values, [READ], Thresholds(), errors={"c": "fio not found"})
    assert result.excluded == ("c",)
    (decision,) = [d for d in result.decisions if d.excluded]
    assert decision.error == "fio not found" and "could not run" in decision.reason


def test_with_three_nodes_a_node_far_below_both_others_is_an_outlier() -> None:
    # One healthy node was starved (100), which widens the MAD of the other two;
    # the sick node (4) is still 25x below both others.
    values = {"fast0": 700.0, "fast1": 100.0, "sick": 4.0}
    found = robust_outliers(values, "read_bw_MiB_s", "low", z_limit=3.5, min_relative=0.5)
    assert [o.node for o in found] == ["sick"]
    # Only 3x below the worst other: not clearly apart, and the MAD is wide.
    assert (
        robust_outliers(
            {"fast0": 700.0, "fast1": 100.0, "meh": 33.0}, "m", "low", z_limit=3.5, min_relative=0.5
        )
        == []
    )


def test_a_few_times_worse_beyond_a_limit_is_not_enough_to_exclude() -> None:
    # A short preflight on a shared disk: one healthy node's write p99 spiked
    # 5x past the others and over the 50 ms limit. A warning, not an exclusion.
    write_p99 = PolicyMetric("write_p99_ns", "high", "rand_write_p99_max_ms", 1e6)
    values = {
        "fast0": {"write_p99_ns": 14e6},
        "fast1": {"write_p99_ns": 70e6},
        "fast2": {"write_p99_ns": 12e6},
    }
    result = decide_exclusions(values, [write_p99], Thresholds())
    assert result.excluded == ()
    values["sick"] = {"write_p99_ns": 900e6}
    assert decide_exclusions(values, [write_p99], Thresholds()).excluded == ("sick",)


def test_an_exclusion_reason_prints_large_figures_whole() -> None:
    evidence = Evidence("write_iops", 123.0, 52_345.0, 0.00234, -431.0, 20_000.0, True)
    assert evidence.describe() == (
        "write_iops = 123 (0.0023x the median 52,345, robust z -431), below the limit 20,000"
    )


def test_a_node_that_could_not_be_measured_is_never_kept_as_if_it_had_passed() -> None:
    """Below the minimum a failed node stays, but as unchecked, with its error."""
    thresholds = Thresholds(min_nodes=2)
    values = {"a": {"read_bw_MiB_s": 2000.0}}
    errors = {"b": "the diagnose worker on b printed nothing", "c": "fio not found"}
    result = decide_exclusions(values, [READ], thresholds, errors=errors)
    assert result.excluded == ("b",) and result.kept == ("a", "c")
    kept = next(d for d in result.decisions if d.node == "c")
    assert not kept.excluded and kept.error == "fio not found"
    assert kept.reason == (
        "kept unchecked: its preflight could not run (fio not found); "
        "excluding it would leave fewer than 2 nodes"
    )
    assert "despite the evidence" not in kept.reason


def test_a_preflight_that_failed_on_every_node_singles_none_out() -> None:
    errors = {node: f"fio on {node} exited 1: unknown ioengine" for node in ("a", "b", "c")}
    result = decide_exclusions({}, [READ], Thresholds(), errors=errors)
    assert result.excluded == () and result.kept == ("a", "b", "c")
    for decision in result.decisions:
        assert not decision.excluded and decision.error == errors[decision.node]
        assert decision.reason == (
            f"kept unchecked: the preflight could not run on any node ({errors[decision.node]}), "
            "which points at the job, not at this node"
        )
    # One node measured makes the others' failures their own: excluded down to the floor.
    measured = decide_exclusions({"a": {"read_bw_MiB_s": 2000.0}}, [READ], Thresholds(),
                                 errors={"b": errors["b"], "c": errors["c"]})  # fmt: skip
    assert measured.minimum_nodes == 2 and measured.excluded == ("b",)
