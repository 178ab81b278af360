"""Throttle one node's daemon while a real `benchfs run` goes on: a thread
that waits for the daemon to register and its phase to start, then moves the
daemon into a throttled cgroup and back out on a schedule (seconds since the
phase started), noting the wall-clock time of every move."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from run_helpers import scratch_dirs


class Throttler(threading.Thread):
    """``schedule``: (seconds after the first phase started, into the group or out)."""

    def __init__(
        self, results: Path, node: str, group: Path, root: Path,
        schedule: Sequence[tuple[float, bool]],
    ) -> None:  # fmt: skip
        super().__init__(daemon=True)
        self.results, self.node, self.group, self.root = results, node, group, root
        self.schedule = list(schedule)
        self.moves: list[tuple[int, bool]] = []  # (unix ns, into the group)
        self.pid: int | None = None
        self.phase_started: float | None = None  # unix seconds
        self.halt = threading.Event()

    def run(self) -> None:
        phase_started: float | None = None
        while not self.halt.wait(0.02) and self.schedule:
            for scratch in scratch_dirs(self.results):
                if self.pid is None:
                    self.pid = _daemon_pid(scratch, self.node)
                if phase_started is None and self.pid is not None:
                    phase_started = _phase_start(scratch / "p0" / "phase.json")
            if phase_started is None or self.pid is None:
                continue
            at, into = self.schedule[0]
            if time.time() >= phase_started + at:
                target = self.group if into else self.root
                (target / "cgroup.procs").write_text(str(self.pid))
                self.moves.append((time.time_ns(), into))
                self.phase_started = phase_started
                self.schedule.pop(0)

    def moved_s(self) -> list[float]:
        """Each move in seconds since the phase started."""
        assert self.phase_started is not None
        return [ns / 1e9 - self.phase_started for ns, _ in self.moves]

    def __enter__(self) -> Throttler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.halt.set()
        self.join()


def _daemon_pid(scratch: Path, node: str) -> int | None:
    for path in scratch.glob("g*/registry/*.json"):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # being written
        if record.get("node_name") == node:
            return int(record["pid"])
    return None


def _phase_start(path: Path) -> float | None:
    try:
        status = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return int(status["since_unix_ns"]) / 1e9 if status.get("state") == "running" else None
