"""iostat in the background, on this machine or on a host through a launcher.

One process wrapper does it all (``Iostat``): it starts ``iostat -x -t -o
JSON -d [devices] 1`` with its output in a temporary file, counts the
reports written so far, waits for a number of them, stops iostat with
SIGINT (on which iostat closes its JSON document) and parses what it wrote.
Launchers do not always pass SIGINT through intact (srun, for one, wants it
twice), so the output is read leniently: every complete report counts, a
cut-off last one is dropped, and the raw file keeps the complete ones. The
first report covers the time since boot and is dropped by the parser.

- ``IostatSampler``: devices of this machine, one diagnose test at a time;
  iostat's own failures are errors;
- ``IostatWatch``: one host through a launcher;
- ``IostatWatches``: one watch per host of a run, started and stopped
  together, an observer whose troubles are notes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from analysis.loaders.iostat import IostatFormatError, IostatReport, parse_iostat_json
from benchfs.cluster.hostfile import Host
from benchfs.cluster.processes import ManagedProcess, kill_group, start_process
from benchfs.cluster.stuck import StuckOutput
from benchfs.errors import BenchfsError, ToolError
from benchfs.launchers.base import Launcher
from benchfs.tools.iostat_stream import IostatStream, ReportLines

_STOP_GRACE_S = 5.0
_POLL_S = 0.05
# How long iostat may take to write its first report through the launcher,
# and one interval report after that. Only a guard against a stuck iostat.
REPORT_DEADLINE_S = 30.0


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


class Iostat:
    """One iostat process in the background until ``stop()``.

    ``strict``: iostat runs here, so a failure to start, an exit status other
    than SIGINT's or output that does not parse is a ToolError. Otherwise
    (through a launcher) whatever complete reports came back are the result.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        where: str,
        raw_output: Path | None = None,
        env: Mapping[str, str] | None = None,
        strict: bool = False,
        stuck_when: StuckOutput | None = None,
    ) -> None:
        self.argv = list(argv)
        self.where = where
        self.raw_output = raw_output
        self.report: IostatReport | None = None
        self._env = env
        self._strict = strict
        self._stuck_when = stuck_when
        self._process: ManagedProcess | None = None
        self._stdout: IO[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        # The output read so far while running (``report_so_far``).
        self._stream: IostatStream | None = None

    def start(self) -> Self:
        if self._process is not None:
            raise ToolError(f"iostat on {self.where} is already running")
        # Files rather than pipes: iostat never blocks on a full pipe, and the
        # reports written so far can be counted. They live until stop().
        self._stdout = tempfile.TemporaryFile()  # noqa: SIM115
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self._stream = None
        try:
            self._process = start_process(
                self.argv,
                name=f"iostat on {self.where}",
                env=self._env,
                stdout=self._stdout,
                stderr=self._stderr,
                die_with_parent=True,
                error=ToolError,
                stuck_when=self._stuck_when,
                # Only here is iostat itself started (through a launcher, the launcher is).
                missing=f"iostat not found: {self.argv[0]} is not on PATH"
                if self._strict
                else None,
            )
        except ToolError:
            self._close_files()
            raise
        return self

    def stuck(self) -> str | None:
        """What its launcher said when it cannot finish (see ``benchfs.cluster.stuck``)."""
        return None if self._process is None else self._process.stuck()

    def reports_written(self) -> int:
        """Reports iostat has written so far, the since-boot one included.

        iostat flushes its output after every report, so the count is exact.
        """
        if self._stdout is None:
            return 0
        fd = self._stdout.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).count(b'"timestamp"')

    def report_so_far(self) -> IostatReport | None:
        """The complete reports written so far (the since-boot one dropped),
        read while iostat runs; None before it started or when unreadable."""
        if self._stdout is None:
            return None
        fd = self._stdout.fileno()
        size = os.fstat(fd).st_size
        # Read each second by the live view: only what iostat wrote since is parsed.
        stream = self._stream
        if stream is None:
            stream = self._stream = IostatStream(f"iostat on {self.where}")
        try:
            if size > stream.offset:
                stream.feed(os.pread(fd, size - stream.offset, stream.offset))
        except IostatFormatError:
            return None
        return stream.report()

    def wait_for_reports(self, count: int, deadline_s: float) -> bool:
        """Wait until ``count`` reports are written; False if iostat exited,
        its launcher said it cannot finish, or the deadline passed first."""
        end = time.monotonic() + deadline_s
        while self.reports_written() < count:
            process = self._process
            if (
                process is None
                or process.returncode is not None
                or process.stuck() is not None
                or time.monotonic() > end
            ):
                return self.reports_written() >= count
            time.sleep(_POLL_S)
        return True

    def stop(self) -> IostatReport:
        """Stop iostat and return its samples (the since-boot report dropped)."""
        process, stdout, stderr = self._process, self._stdout, self._stderr
        if process is None or stdout is None or stderr is None:
            raise ToolError(f"iostat on {self.where} was not started")
        self._process = None
        try:
            ignored = self._interrupt(process)
            stdout.seek(0)
            text = stdout.read().decode(errors="replace")
            stderr.seek(0)
            messages = stderr.read().decode(errors="replace").strip()
        finally:
            self._close_files()
        if self.raw_output is not None:
            self.raw_output.parent.mkdir(parents=True, exist_ok=True)
            self.raw_output.write_text(text if _parses(text) else _complete_reports(text))
        if self._strict:
            if ignored:
                raise ToolError(f"iostat on {self.where} ignored SIGINT")
            code = process.popen.returncode
            if code not in (0, -signal.SIGINT):
                detail = messages.splitlines()[-1] if messages else "no message"
                raise ToolError(f"iostat on {self.where} failed (exit code {code}): {detail}")
        source = str(self.raw_output or f"iostat on {self.where}")
        try:
            self.report = parse_lenient(text, source)
        except IostatFormatError as exc:
            raise ToolError(f"iostat: {exc}") from exc
        return self.report

    def _interrupt(self, process: ManagedProcess) -> bool:
        """SIGINT to iostat (and the launcher around it); True if it had to be killed."""
        if process.returncode is not None:
            process.close_files()
            return False
        try:
            os.killpg(process.pid, signal.SIGINT)
            process.popen.wait(timeout=_STOP_GRACE_S)
        except ProcessLookupError:
            process.popen.wait()
        except subprocess.TimeoutExpired:
            kill_group(process)
            return True
        process.close_files()
        return False

    def _close_files(self) -> None:
        for handle in (self._stdout, self._stderr):
            if handle is not None:
                handle.close()
        self._stdout = self._stderr = None

    def __enter__(self) -> Self:
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
            self._close_files()


class IostatSampler(Iostat):
    """iostat on ``devices`` of this machine; ``stop()`` returns the report.

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
        merged = dict(env) if env is not None else dict(os.environ)
        merged.setdefault("S_TIME_FORMAT", "ISO")  # ISO timestamps instead of the locale's
        super().__init__(
            iostat_command(self.devices, interval_s, iostat_binary),
            where=", ".join(self.devices),
            raw_output=raw_output,
            env=merged,
            strict=True,
        )


class IostatWatch(Iostat):
    """iostat on one host through the launcher (every device unless named)."""

    def __init__(
        self,
        host: Host,
        launcher: Launcher,
        devices: Sequence[str] = (),
        *,
        interval_s: int = 1,
        raw_output: Path | None = None,
    ) -> None:
        self.host = host
        tool = iostat_argv(devices, interval_s)
        # Nothing of the run's environment: a launcher would put it on its command line.
        argv = launcher.command(host, tool, env={"S_TIME_FORMAT": "ISO"})
        super().__init__(
            argv, where=host.name, raw_output=raw_output, stuck_when=launcher.stuck_output()
        )


class IostatWatches:
    """One ``IostatWatch`` per host, started together and stopped together.

    An observer: a watch that cannot start or whose output cannot be read
    becomes a line in ``notes``, never an error.
    """

    def __init__(self, watches: Sequence[IostatWatch]) -> None:
        self.watches = list(watches)
        self.started: list[IostatWatch] = []
        self.notes: list[str] = []

    def start(self) -> None:
        """Start iostat on every host and wait until each is sampling (its
        since-boot report is out), so that the workload's window is covered."""
        for watch in self.watches:
            try:
                self.started.append(watch.start())
            except (BenchfsError, OSError) as error:
                self.notes.append(f"iostat not watched on {watch.host.name}: {error}")
        self._wait_for_reports(1, "no report")

    def poll(self) -> None:
        """Nothing to look at while the workload runs: the samples are read after it."""

    def report_so_far(self, host: str | None) -> IostatReport | None:
        """The reports ``host``'s iostat has written so far (the live view reads
        them each interval); None: the only host's, when there is one."""
        started = list(self.started)
        if host is None:
            return started[0].report_so_far() if len(started) == 1 else None
        for watch in started:
            if watch.host.name == host:
                return watch.report_so_far()
        return None

    def stop(self) -> None:
        """Stop every watch once it has written at least one interval report
        after its since-boot one (a short workload still gets a sample)."""
        self._wait_for_reports(2, "no interval report")
        started, self.started = self.started, []
        for watch in started:
            try:
                watch.stop()
            except (BenchfsError, OSError) as error:
                self.notes.append(f"iostat on {watch.host.name} unreadable: {error}")

    def _wait_for_reports(self, count: int, missing: str) -> None:
        end = time.monotonic() + REPORT_DEADLINE_S  # one deadline for all hosts
        for watch in self.started:
            if not watch.wait_for_reports(count, max(0.0, end - time.monotonic())):
                stuck = watch.stuck()
                self.notes.append(
                    f"iostat on {watch.host.name}: {missing}"
                    + (f": {stuck}" if stuck else f" within {REPORT_DEADLINE_S:.0f} s")
                )


def parse_lenient(text: str, source: str) -> IostatReport:
    """Parse iostat JSON; when it was cut off, keep the reports that were complete.
    Nothing at all (stopped before the first report) is an empty report."""
    if not text.strip():
        return IostatReport(source=source, nodename="", samples=())
    if _parses(text):
        return parse_iostat_json(text, source)
    return parse_iostat_json(_complete_reports(text), source)


def _parses(text: str) -> bool:
    if not text.strip():
        return True  # nothing written: an empty report, kept as it is
    try:
        parse_iostat_json(text, "iostat")
    except IostatFormatError:
        return False
    return True


def _complete_reports(text: str) -> str:
    """Rebuild a document from the whole reports of a cut-off iostat JSON output
    (a report whose disk list never closed is dropped)."""
    lines = ReportLines()
    reports = [report for raw in text.splitlines() if (report := lines.line(raw)) is not None]
    host = {"nodename": lines.nodename, "statistics": reports}
    return json.dumps({"sysstat": {"hosts": [host]}})
