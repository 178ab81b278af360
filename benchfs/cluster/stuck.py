"""A launcher's line that says its job can no longer finish while it runs on.

Hydra's mpiexec (MPICH 4.0) keeps waiting for proxies that reported they
cannot connect back to it, so a wait on such a job (daemons registering, a
host job, the ranks) would last its whole deadline, and each clean-up job
through the same launcher its own. A launcher names the line
(``Launcher.stuck_output``); the process's output files are read as they
grow, and the wait ends at the line, with it as the reason.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any

# Read per check at most, so that a long log is caught up over several polls.
_READ_BYTES = 1 << 20


@dataclass(frozen=True)
class StuckOutput:
    """A line of a launcher's output after which its job never ends by
    itself, and what the user can do about it."""

    pattern: re.Pattern[str]
    advice: str


class OutputWatch:
    """The first line matching a ``StuckOutput`` in the files a process
    writes, each byte read once (a file not opened for reading is skipped)."""

    def __init__(self, stuck: StuckOutput, files: Sequence[IO[Any]]) -> None:
        self.stuck = stuck
        self._files = list(files)
        self._offsets = [0] * len(self._files)
        self._partial = [b""] * len(self._files)
        self.line: str | None = None

    def check(self) -> str | None:
        """The line with the advice once seen, None until then."""
        if self.line is None:
            for index, handle in enumerate(self._files):
                if not handle.closed and self._scan(index, handle.fileno()):
                    break
        return None if self.line is None else f"{self.line} ({self.stuck.advice})"

    def _scan(self, index: int, fd: int) -> bool:
        try:
            data = os.pread(fd, _READ_BYTES, self._offsets[index])
        except OSError:  # not readable (a caller's write-only file): not watched
            return False
        self._offsets[index] += len(data)
        *lines, self._partial[index] = (self._partial[index] + data).split(b"\n")
        for raw in lines:
            line = raw.decode(errors="replace").strip()
            if self.stuck.pattern.search(line):
                self.line = line
                return True
        return False
