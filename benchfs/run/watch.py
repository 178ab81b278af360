"""What watches a point's workload while it runs (step 7 of the flow,
docs/ARCHITECTURE.md): iostat on every host, the ranks' live progress.

A watch is started before the workload's processes, polled by the
workload's wait loop about every ``POLL_S`` while they run, and stopped on
every exit. Raising from ``poll`` ends the point (a ``LaunchError`` that
names what it saw); what a watch only noticed goes into ``notes``, which
the manifest keeps. A new watch (per-node figures, a straggler policy) is
one class with these four members, added to the point's ``Watches``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

# How often a workload's wait loop looks at its processes and polls the watches.
POLL_S = 0.2


class PointWatch(Protocol):
    notes: list[str]

    def start(self) -> None:
        """Before the workload's processes start."""

    def poll(self) -> None:
        """While they run; raising ends the point."""

    def stop(self) -> None:
        """On every exit, once they ended."""


class Watches:
    """The watches of one point, started, polled and stopped together."""

    def __init__(self, watches: Iterable[PointWatch] = ()) -> None:
        self.watches = list(watches)
        self.started: list[PointWatch] = []

    def add(self, watch: PointWatch) -> None:
        self.watches.append(watch)

    def start(self) -> None:
        for watch in self.watches:
            watch.start()
            self.started.append(watch)

    def poll(self) -> None:
        for watch in self.started:
            watch.poll()

    def stop(self) -> None:
        """Stop every started watch, the last started first."""
        started, self.started = self.started, []
        for watch in reversed(started):
            watch.stop()

    @property
    def notes(self) -> list[str]:
        return [note for watch in self.watches for note in watch.notes]
