"""What a run reports while it goes, and what it leaves per point."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchfs.config.plan import SweepPoint
from benchfs.results.manifest import ManifestRecorder, Status
from benchfs.workload.progress import PhaseProgress


class RunObserver:
    """What a run reports while it goes; the CLI draws it, tests ignore it."""

    def step(self, message: str) -> None:
        """A step of the flow started (``starting 4 daemons``)."""

    def point_started(self, point: SweepPoint, count: int, run_dir: Path) -> None:
        """A run (one point of the sweep) started in ``run_dir``."""

    def progress(self, progress: PhaseProgress) -> None:
        """Live figures of the phase running now (about every 200 ms)."""

    def alert(self, message: str) -> None:
        """A node named by the live view while its phase runs (``local3: storage op ...``)."""

    def point_finished(self, result: PointResult) -> None:
        """A run ended (completed or not)."""


@dataclass
class PointResult:
    index: int
    run_dir: Path
    status: Status
    summary: dict[str, Any] | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    # One line per node whose disk was slow during the workload.
    stragglers: list[str] = field(default_factory=list)
    # Where the history of its nodes went, or why it was not written (one line).
    history: str | None = None
    # The writer of the point's manifest.json, for notes that come after its end.
    manifest: ManifestRecorder | None = field(default=None, repr=False, compare=False)
