"""The run's progress bars: one per phase, each stopped when its phase ends."""

from __future__ import annotations

from rich.progress import Task

from benchfs.cli.run_display import ConsoleObserver
from benchfs.workload.progress import PhaseProgress, PhaseStatus, State


def _seen(phase: str, state: State, stonewall_s: float = 15.0) -> PhaseProgress:
    status = PhaseStatus(0, phase, state, 0, 1 << 30, stonewall_s=stonewall_s)
    return PhaseProgress(status, bytes=1 << 20, ops=1, elapsed_s=1.0)


def _task(observer: ConsoleObserver, phase: str) -> Task:
    assert observer.bars is not None
    (task,) = [t for t in observer.bars.tasks if t.id == observer.tasks[(0, phase)]]
    return task


def _close(observer: ConsoleObserver) -> None:
    if observer.bars is not None:
        observer.bars.stop()


def test_a_phase_whose_end_was_not_seen_stops_when_the_next_one_starts() -> None:
    observer = ConsoleObserver()
    try:
        observer.progress(_seen("write", "running"))
        assert _task(observer, "write").stop_time is None
        # The write phase's "done" fell between two polls: the read phase is next.
        observer.progress(_seen("read", "running"))
        write = _task(observer, "write")
        assert write.stop_time is not None and write.completed == write.total
        assert _task(observer, "read").stop_time is None
    finally:
        _close(observer)


def test_a_finished_phase_keeps_the_time_it_stopped_at() -> None:
    observer = ConsoleObserver()
    try:
        observer.progress(_seen("read", "done"))
        stopped = _task(observer, "read").stop_time
        assert stopped is not None
        observer.progress(_seen("read", "done"))
        assert _task(observer, "read").stop_time == stopped
    finally:
        _close(observer)
