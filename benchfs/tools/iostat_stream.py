"""iostat's JSON output read as it grows, one complete report at a time.

iostat writes one disk per line and closes each report's disk list with a
line holding only ``]`` (``ReportLines``). ``IostatStream`` keeps how far it
has read: each ``feed`` parses only the lines completed since, so a live
reader pays for what iostat wrote last, not for the whole output again. A
report whose list has not closed yet waits for its next bytes.
"""

from __future__ import annotations

import json
from typing import Any

from analysis.loaders.iostat import (
    IostatFormatError,
    IostatReport,
    IostatSample,
    report_samples,
)


class ReportLines:
    """The reports of iostat's JSON output from its lines, in order."""

    def __init__(self) -> None:
        self.nodename = ""
        self._current: dict[str, Any] | None = None

    def line(self, raw: str) -> dict[str, Any] | None:
        """The report this line completes, if it completes one."""
        line = raw.strip().rstrip(",")
        current = self._current
        if line.startswith('"nodename"'):
            self.nodename = line.split(":", 1)[1].strip().strip('"')
        elif line.startswith('"timestamp"'):
            self._current = {"timestamp": line.split(":", 1)[1].strip().strip('"'), "disk": []}
        elif line.startswith('"disk": ['):
            self._current = current if current is not None and not current["disk"] else {"disk": []}
        elif line.startswith('{"disk_device"') and current is not None:
            try:
                current["disk"].append(json.loads(line))
            except json.JSONDecodeError:
                self._current = None  # a cut line: its report is dropped
        elif line == "]" and current is not None:
            self._current = None
            return current
        return None


class IostatStream:
    """The reports of one growing iostat output; ``offset``: the bytes fed so far."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.offset = 0
        self._lines = ReportLines()
        self._tail = b""  # the last line, not yet complete
        self._reports = 0  # complete reports seen, the since-boot one included
        self._samples: list[IostatSample] = []

    def feed(self, data: bytes) -> None:
        """The output's next bytes (from ``offset`` on). A report that does not
        parse raises ``IostatFormatError``; the reports after it still count."""
        self.offset += len(data)
        text = self._tail + data
        complete, newline, self._tail = text.rpartition(b"\n")
        if not newline:
            return
        error: IostatFormatError | None = None
        for raw in complete.decode(errors="replace").split("\n"):
            report = self._lines.line(raw)
            if report is None:
                continue
            index, self._reports = self._reports, self._reports + 1
            if index == 0:  # the first report covers the time since boot
                continue
            try:
                where = f"{self.source}: report #{index}"
                self._samples.extend(report_samples(report, index - 1, where))
            except IostatFormatError as bad:
                error = error or bad
        if error is not None:
            raise error

    def report(self) -> IostatReport:
        """Every complete interval report so far."""
        return IostatReport(
            source=self.source, nodename=self._lines.nodename, samples=tuple(self._samples)
        )
