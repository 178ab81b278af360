"""Keep iostat running on a node through the launcher while a workload runs.

``start()`` launches ``iostat -x -t -o JSON -d [devices] 1`` on the host;
``stop()`` interrupts it and returns per-device samples over time. Launchers
do not always pass SIGINT through intact (srun, for one, wants it twice), so
the output is read leniently: every complete report counts, a cut-off last
one is dropped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from analysis.loaders.iostat import IostatFormatError, IostatReport, parse_iostat_json
from benchfs.cluster.hostfile import Host
from benchfs.errors import ToolError
from benchfs.launchers.base import Launcher
from benchfs.tools.iostat import iostat_argv
from benchfs.tools.process import kill_group

_STOP_GRACE_S = 5.0
_POLL_S = 0.05


class IostatWatch:
    """iostat on one host, in the background, until ``stop()``."""

    def __init__(
        self,
        host: Host,
        launcher: Launcher,
        devices: Sequence[str] = (),
        *,
        interval_s: int = 1,
        raw_output: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.host = host
        tool = iostat_argv(devices, interval_s)
        self.argv = launcher.command(host, tool, env={"S_TIME_FORMAT": "ISO", **(env or {})})
        self.raw_output = raw_output
        self._process: subprocess.Popen[str] | None = None
        self._stdout: IO[str] | None = None

    def start(self) -> IostatWatch:
        # Lives until stop(), so no with-block here.
        self._stdout = tempfile.TemporaryFile("w+")  # noqa: SIM115
        try:
            self._process = subprocess.Popen(
                self.argv,
                stdout=self._stdout,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                text=True,
                start_new_session=True,
            )
        except OSError as exc:
            self._stdout.close()
            raise ToolError(
                f"cannot start iostat on {self.host.name}: {self.argv[0]}: {exc.strerror}"
            ) from exc
        return self

    def reports_written(self) -> int:
        """Reports iostat has written so far, the since-boot one included.

        iostat flushes its output after every report, so the count is exact.
        """
        if self._stdout is None:
            return 0
        fd = self._stdout.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).count(b'"timestamp"')

    def wait_for_reports(self, count: int, deadline_s: float) -> bool:
        """Wait until ``count`` reports are written; False if iostat exited or
        the deadline passed first."""
        end = time.monotonic() + deadline_s
        while self.reports_written() < count:
            process = self._process
            if process is None or process.poll() is not None or time.monotonic() > end:
                return self.reports_written() >= count
            time.sleep(_POLL_S)
        return True

    def stop(self) -> IostatReport:
        """Stop iostat on the host and return its samples (first, since-boot report dropped)."""
        process, stdout = self._process, self._stdout
        if process is None or stdout is None:
            raise ToolError(f"iostat on {self.host.name} was not started")
        self._process = self._stdout = None
        try:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGINT)
                try:
                    process.wait(timeout=_STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    kill_group(process)
            stdout.seek(0)
            text = stdout.read()
        finally:
            stdout.close()
        if self.raw_output is not None:
            self.raw_output.parent.mkdir(parents=True, exist_ok=True)
            self.raw_output.write_text(text)
        return parse_lenient(text, str(self.raw_output or f"iostat on {self.host.name}"))


def parse_lenient(text: str, source: str) -> IostatReport:
    """Parse iostat JSON; when it was cut off, keep the reports that were complete."""
    try:
        return parse_iostat_json(text, source)
    except IostatFormatError:
        pass
    return parse_iostat_json(_complete_reports(text), source)


def _complete_reports(text: str) -> str:
    """Rebuild a document from the whole reports of a cut-off iostat JSON output.

    iostat writes one disk per line and closes each report's disk list with a
    line holding only ``]``; a report whose list never closed is dropped.
    """
    reports: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    nodename = ""
    for raw in text.splitlines():
        line = raw.strip().rstrip(",")
        if line.startswith('"nodename"'):
            nodename = line.split(":", 1)[1].strip().strip('"')
        elif line.startswith('"timestamp"'):
            current = {"timestamp": line.split(":", 1)[1].strip().strip('"'), "disk": []}
        elif line.startswith('"disk": ['):
            current = current if current is not None and not current["disk"] else {"disk": []}
        elif line.startswith('{"disk_device"') and current is not None:
            try:
                current["disk"].append(json.loads(line))
            except json.JSONDecodeError:
                current = None  # the cut fell inside this line
        elif line == "]" and current is not None:
            reports.append(current)
            current = None
    return json.dumps({"sysstat": {"hosts": [{"nodename": nodename, "statistics": reports}]}})
