"""Throttle one node's daemon while a real `benchfs run` goes on: a thread
that waits for the daemon to register and its phase to start, then moves the
daemon into a throttled cgroup and back out on a schedule, noting the
wall-clock time of every move.

Each move waits for what the test checks rather than for a time: the phase
to have run ``after_s`` seconds, and the live view's samples of the node
(``live/samples.jsonl``) to show the state the node is in since the last
move for ``settled`` intervals in a row (slow while throttled, not slow
while free). A phase then spends no more time unthrottled than the live
view needs to see it, so its block (lowered to the disk's free space) lasts
until the stonewall however fast the machine is."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from run_helpers import scratch_dirs

from analysis.loaders.live import parse_live_samples


class Move(NamedTuple):
    """Into the group (or out) once the phase ran ``after_s`` seconds and the
    node's last ``settled`` samples since the previous move agree with it."""

    after_s: float
    into: bool
    settled: int = 0


class Throttler(threading.Thread):
    def __init__(
        self, results: Path, node: str, group: Path, root: Path, schedule: Sequence[Move],
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
            move = self.schedule[0]
            if time.time() < phase_started + move.after_s or not self._settled(
                phase_started, move.settled
            ):
                continue
            target = self.group if move.into else self.root
            (target / "cgroup.procs").write_text(str(self.pid))
            self.moves.append((time.time_ns(), move.into))
            self.phase_started = phase_started
            self.schedule.pop(0)

    def _settled(self, phase_started: float, count: int) -> bool:
        """The node's last ``count`` samples, all begun after the last move, say
        it is slow while in the group and not slow while out of it."""
        if count == 0:
            return True
        since_s = self.moves[-1][0] / 1e9 - phase_started if self.moves else 0.0
        throttled = bool(self.moves) and self.moves[-1][1]
        seen = [
            row["slow"]
            for row in _samples(self.results)
            if row.get("node") == self.node and float(row.get("start_s", -1)) >= since_s
        ]
        return len(seen) >= count and all(slow is throttled for slow in seen[-count:])

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


def _samples(results: Path) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for path in results.glob("*/live/samples.jsonl"):
        try:
            text = path.read_text()
        except OSError:
            continue
        # The last line may be being written.
        frame, _ = parse_live_samples(text, str(path), allow_partial=True)
        rows += frame.to_dict("records")
    return rows


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
