"""Sample ``iostat -x -o JSON`` on chosen devices while something else runs.

iostat is stopped with SIGINT, on which it closes its JSON document; the
first report (since boot) is dropped by the parser.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from analysis.loaders.iostat import IostatFormatError, IostatReport, parse_iostat_json
from benchfs.errors import ToolError
from benchfs.tools.process import kill_group

_STOP_GRACE_S = 5.0


def iostat_argv(
    devices: Sequence[str], interval_s: int = 1, iostat_binary: str = "iostat"
) -> list[str]:
    """iostat with timestamps per report and extended stats; no devices means all."""
    return [iostat_binary, "-x", "-t", "-o", "JSON", "-d", *devices, str(interval_s)]


def iostat_command(
    devices: Sequence[str], interval_s: int = 1, iostat_binary: str = "iostat"
) -> list[str]:
    """The exact argv the sampler runs: the devices under test, never all of them."""
    if not devices:
        raise ToolError("iostat: no devices to watch")
    return iostat_argv(devices, interval_s, iostat_binary)


def iostat_available(iostat_binary: str = "iostat", path: str | None = None) -> bool:
    return shutil.which(iostat_binary, path=path) is not None


class IostatSampler:
    """iostat running in the background on ``devices``; ``stop()`` returns the report.

    Usable as a context manager, which stops (and kills if needed) iostat on
    exit even when the body raises.
    """

    def __init__(
        self,
        devices: Sequence[str],
        *,
        interval_s: int = 1,
        raw_output: Path | None = None,
        iostat_binary: str = "iostat",
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.devices = list(devices)
        self.argv = iostat_command(self.devices, interval_s, iostat_binary)
        self.raw_output = raw_output
        self._env = dict(env) if env is not None else dict(os.environ)
        self._env.setdefault("S_TIME_FORMAT", "ISO")  # ISO timestamps instead of the locale's
        self._process: subprocess.Popen[str] | None = None
        self.report: IostatReport | None = None

    def start(self) -> IostatSampler:
        if self._process is not None:
            raise ToolError(f"iostat on {', '.join(self.devices)} is already running")
        try:
            self._process = subprocess.Popen(
                self.argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
                env=self._env,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise ToolError(f"iostat not found: {self.argv[0]} is not on PATH") from exc
        return self

    def stop(self) -> IostatReport:
        """Stop iostat and parse what it printed."""
        process = self._process
        if process is None:
            raise ToolError("iostat was not started")
        self._process = None
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            stdout, stderr = process.communicate(timeout=_STOP_GRACE_S)
        except subprocess.TimeoutExpired as exc:
            kill_group(process)
            raise ToolError(f"iostat on {', '.join(self.devices)} ignored SIGINT") from exc
        if self.raw_output is not None:
            self.raw_output.parent.mkdir(parents=True, exist_ok=True)
            self.raw_output.write_text(stdout)
        source = str(self.raw_output) if self.raw_output else f"iostat on {self.devices}"
        if process.returncode not in (0, -signal.SIGINT):
            detail = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
            raise ToolError(
                f"iostat on {', '.join(self.devices)} failed "
                f"(exit code {process.returncode}): {detail}"
            )
        if not stdout.strip():  # stopped before iostat printed its first report
            self.report = IostatReport(source=source, nodename="", samples=())
            return self.report
        try:
            self.report = parse_iostat_json(stdout, source)
        except IostatFormatError as exc:
            raise ToolError(f"iostat: {exc}") from exc
        return self.report

    def __enter__(self) -> IostatSampler:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._process is None:
            return
        if exc_type is None:
            self.stop()
        else:
            process, self._process = self._process, None
            kill_group(process)
