"""Step times: nested names, steps run twice, nothing recorded outside a block."""

from __future__ import annotations

import time

from analysis.timing import record_steps, step


def test_steps_nest_under_the_enclosing_step_in_the_order_they_began() -> None:
    with record_steps() as times:
        with step("statistics"):
            with step("latency"):
                time.sleep(0.01)
            with step("nodes"):
                pass
        with step("markdown"):
            pass
    assert list(times.steps) == ["statistics", "statistics.latency", "statistics.nodes", "markdown"]
    whole, part = times.steps["statistics"], times.steps["statistics.latency"]
    assert whole.wall_s >= part.wall_s >= 0.01
    assert all(t.cpu_s >= 0 for t in times.steps.values())


def test_a_step_run_twice_counts_both_times_once() -> None:
    with record_steps() as times:
        for _ in range(2):
            with step("plots"):
                time.sleep(0.01)
    assert list(times.steps) == ["plots"]
    assert times.steps["plots"].wall_s >= 0.02


def test_a_step_outside_a_recording_block_is_not_kept() -> None:
    with step("load"):
        pass
    with record_steps() as times:
        pass
    assert times.steps == {}


def test_a_failing_step_is_timed_and_the_error_passes() -> None:
    with record_steps() as times:
        try:
            with step("load"):
                raise ValueError("bad input")
        except ValueError:
            pass
        with step("report"):
            pass
    assert list(times.steps) == ["load", "report"]  # "report" is not under "load"
