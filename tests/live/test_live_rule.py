"""The live view's pure parts: figures from two stats replies, the straggler
rule over intervals, and the time patterns said from slow spans and buckets."""

from __future__ import annotations

from typing import Any

import pytest

from analysis.stats.patterns import bucket_pattern, pattern_of
from benchfs.run.live.figures import NodeFigures, daemon_interval, p99_ms
from benchfs.run.live.rule import PhaseJudge, Rule


def stats(answered: int, storage_ms: float, *, in_flight: int = 0) -> dict[str, Any]:
    """A stats reply with ``answered`` writes of ``storage_ms`` each (and the sampler's own)."""
    ns = int(storage_ms * 1e6)
    return {
        "in_flight": in_flight,
        "queue_depth": 0,
        "bytes_in": answered * 65536,
        "bytes_out": 0,
        "timing": {
            "write": {"answered": answered, "queue_ns": answered * 10_000,
                      "storage_ns": answered * ns, "server_ns": answered * (ns + 50_000),
                      "server_hist_us": [[ns / 1000 * 1.2, answered]],
                      "storage_hist_us": [[ns / 1000 * 1.1, answered]]},
            "stats": {"answered": 5, "queue_ns": 0, "storage_ns": 0, "server_ns": 10**12},
        },
    }  # fmt: skip


def test_an_interval_is_the_difference_of_two_replies_without_the_samplers_own_requests() -> None:
    figures = daemon_interval("n", "h", stats(10, 1.0), stats(30, 2.5), seconds=2.0)
    # 20 writes: (30 * 2.5 - 10 * 1.0) / 20 ms each in the store.
    assert figures.ops == 20
    assert figures.storage_op_ms == pytest.approx(3.25)
    assert figures.server_ms == pytest.approx(3.30)
    assert figures.queue_ms == pytest.approx(0.01)
    assert figures.mib_s == pytest.approx(20 * 65536 / 2 / (1 << 20))


def test_p99_is_the_upper_bound_of_the_bucket_that_holds_it() -> None:
    before = {10.0: 5, 100.0: 0}
    after = {10.0: 104, 100.0: 2, 1000.0: 1}
    assert p99_ms(before, after) == pytest.approx(0.1)
    assert p99_ms(after, after) is None


def node(value: float | None, ops: int = 20, in_flight: int = 0) -> NodeFigures:
    return NodeFigures(node="", host=None, seconds=1.0, ops=ops, in_flight=in_flight,
                       server_ms=value)  # fmt: skip


def feed(judge: PhaseJudge, slow: list[bool], *, slow_ms: float = 200.0) -> list[str]:
    said = []
    for second, flag in enumerate(slow):
        nodes = {
            "a": node(1.0),
            "b": node(1.2),
            "c": node(0.9),
            "d": node(slow_ms if flag else 1.1),
        }
        events = judge.interval(float(second), float(second + 1), nodes)
        said += [f"raised {s.node} onset {s.onset_s:g}" for s in events.raised]
        said += [f"ended {s.node} at {s.ended_s:g}" for s in events.ended]
    return said


def test_three_slow_intervals_in_a_row_raise_an_alert_three_healthy_end_it() -> None:
    judge = PhaseJudge()
    events = feed(judge, [False, True, True, False, True, True, True, False, False, False])
    # The onset is the end of the first slow interval of the run that raised it.
    assert events == ["raised d onset 5", "ended d at 7"]
    assert [(s.onset_s, s.ended_s) for s in judge.spans["d"]] == [(5.0, 7.0)]


def test_neither_a_small_ratio_nor_a_small_extra_is_a_straggler() -> None:
    assert feed(PhaseJudge(), [True] * 6, slow_ms=3.9) == []  # 3.6x the others
    assert not Rule().slow(0.5, 0.02)  # 25x, but 0.48 ms more
    assert Rule().slow(6.0, 1.0)


def test_a_stalled_node_counts_as_the_whole_interval_and_lone_nodes_are_not_judged() -> None:
    stalled = node(None, ops=0, in_flight=3)
    assert stalled.judged_ms() == 1000.0 and node(None, ops=0).judged_ms() is None
    judge = PhaseJudge()
    for second in range(4):
        judge.interval(second, second + 1, {"a": node(1.0), "b": node(None, ops=0), "d": stalled})
    assert judge.spans == {}  # one peer with figures: too few to judge


def test_patterns_from_spans() -> None:
    assert pattern_of([], 0.0, 1.0).pattern == "none"
    assert pattern_of([(1.0, None)], 0.05, 1.0).pattern == "whole"
    onset = pattern_of([(10.0, None)], 0.05, 1.0)
    assert (onset.pattern, onset.onset_s) == ("onset", 10.0)
    assert onset.words() == "slow from t+10 s to the end"
    assert pattern_of([(4.0, 9.0)], 0.05, 1.0).pattern == "recovered"
    twice = pattern_of([(18.0, None), (4.0, 10.0)], 0.05, 1.0)
    assert twice.pattern == "intermittent"
    assert [(i.start_s, i.end_s) for i in twice.intervals] == [(4.0, 10.0), (18.0, None)]
    assert twice.words() == "slow in 2 intervals: t+4 s to t+10 s, t+18 s to the end"


def test_patterns_from_buckets_never_call_slow_to_the_end_passing() -> None:
    starts = [float(t) for t in range(0, 60, 10)]
    late = bucket_pattern(starts, [False, True, True, True, True, True], 10.0)
    assert (late.pattern, late.words()) == ("onset", "slow from t+10 s to the end")
    assert bucket_pattern(starts, [True] * 6, 10.0).pattern == "whole"
    back = bucket_pattern(starts, [False, True, True, False, False, False], 10.0)
    assert (back.pattern, back.words()) == ("recovered", "slow t+10 s to t+30 s, then recovered")
    two = bucket_pattern(starts, [True, False, False, False, True, False], 10.0)
    assert two.pattern == "intermittent" and len(two.intervals) == 2
    # One healthy bucket inside a slow stretch does not split it.
    assert bucket_pattern(starts, [False, True, False, True, True, True], 10.0).pattern == "onset"


def test_a_short_phase_is_slow_as_a_whole_only_when_most_of_its_seconds_were() -> None:
    # Two slow seconds of three: never three in a row, slow from the first to the end.
    judge = PhaseJudge()
    assert feed(judge, [False, True, True]) == []
    assert judge.phase_spans("d", 134.0, 1.0) == [(2.0, None)]
    # Slow, then healthy for its last second: the span ends with the slow ones.
    judge = PhaseJudge()
    feed(judge, [True, True, False])
    assert judge.phase_spans("d", 134.0, 1.0) == [(1.0, 2.0)]


def test_one_stalled_second_does_not_make_a_short_phase_slow() -> None:
    # One request of 200 ms in the first second lifts the phase's mean past the
    # rule, but the node was the others' for the rest of it.
    judge = PhaseJudge()
    feed(judge, [True, False, False])
    assert judge.phase_spans("d", 67.0, 1.0) == []
    # Nor is a phase slow as a whole when its figure is not.
    judge = PhaseJudge()
    feed(judge, [True, True, False])
    assert judge.phase_spans("d", 3.0, 1.0) == []


def test_a_phase_too_short_to_judge_is_slow_as_a_whole_by_its_figure() -> None:
    judge = PhaseJudge()
    assert judge.phase_spans("d", 200.0, 1.0) == [(0.0, None)]
    assert judge.phase_spans("d", 1.1, 1.0) == []
