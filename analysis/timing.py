"""Wall and CPU seconds of the named steps of a load or a report, for the
analysis benchmark: the loaders, statistics and reports mark their steps with
``step``, which costs nothing unless a ``record_steps`` block is collecting.

Steps nest: a step inside ``statistics`` is recorded as ``statistics.latency``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass(frozen=True)
class StepTime:
    wall_s: float
    cpu_s: float  # of the whole process (every thread) while the step ran


@dataclass
class StepTimes:
    """Each step's time by its dotted name, in the order the steps began."""

    steps: dict[str, StepTime] = field(default_factory=dict)

    def add(self, name: str, wall_s: float, cpu_s: float) -> None:
        known = self.steps.get(name)
        if known is not None:  # a step run twice counts once, with both times
            wall_s, cpu_s = wall_s + known.wall_s, cpu_s + known.cpu_s
        self.steps[name] = StepTime(wall_s, cpu_s)


_recording: ContextVar[StepTimes | None] = ContextVar("analysis_step_times", default=None)
_enclosing: ContextVar[str] = ContextVar("analysis_step_name", default="")


@contextmanager
def record_steps() -> Iterator[StepTimes]:
    """Collect the time of every ``step`` run inside the block."""
    times = StepTimes()
    token = _recording.set(times)
    try:
        yield times
    finally:
        _recording.reset(token)


@contextmanager
def step(name: str) -> Iterator[None]:
    """Time the block as ``name`` (under the enclosing step's name) when recording."""
    times = _recording.get()
    if times is None:
        yield
        return
    parent = _enclosing.get()
    full = f"{parent}.{name}" if parent else name
    times.steps.setdefault(full, StepTime(0.0, 0.0))  # keeps the order steps began in
    token = _enclosing.set(full)
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        _enclosing.reset(token)
        times.add(full, time.perf_counter() - wall, time.process_time() - cpu)
