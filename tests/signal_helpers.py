"""A `benchfs` command in its own session, sent a signal once it is mid-run,
and the checks that it stopped everything it started and left nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cluster.proc_helpers import alive, in_session
from run_helpers import environment, processes_mentioning, wait_for

from benchfs.cluster.processes import descendants

MOUNTINFO = Path("/proc/self/mountinfo")


@dataclass(frozen=True)
class Stopped:
    """How an interrupted command ended, and what it had started."""

    pid: int
    code: int
    stderr: str
    started: list[int]  # its descendants while it ran


def command_temp_dir(tmp_path: Path) -> Path:
    """A TMPDIR for the command (``interrupt(temp_dir=...)``), where fio's
    logs and default scratch dirs go: the test checks it is left empty."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    return temp


def interrupt(
    args: list[str],
    tmp_path: Path,
    mid_run: Callable[[int], object],
    signum: int,
    *,
    temp_dir: Path | None = None,
) -> Stopped:
    """Start ``benchfs ARGS``; once ``mid_run(its pid)`` holds, send ``signum`` to it
    alone (as ``kill PID`` does) and wait for it to end. ``temp_dir``: its TMPDIR,
    so that what it makes in the temp dir can be looked for."""
    err = tmp_path / "stderr"
    with err.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "benchfs", *args],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            env=environment() | ({} if temp_dir is None else {"TMPDIR": str(temp_dir)}),
            start_new_session=True,
        )

    started: list[int] = []

    def ready() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"benchfs {args[0]} ended early:\n{err.read_text()}")
        if not mid_run(process.pid):
            return False
        started[:] = descendants(process.pid)  # what it runs at the moment it is signalled
        return True

    try:
        wait_for(ready, f"benchfs {' '.join(args[:2])} to be mid-run", log=err)
        process.send_signal(signum)
        code = process.wait(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return Stopped(process.pid, code, err.read_text(), started)


def running(pid: int, name: str) -> bool:
    """Whether a process named ``name`` (its comm) descends from ``pid`` and
    runs (one that has exited and waits to be reaped does not)."""
    for child in descendants(pid):
        try:
            if Path(f"/proc/{child}/comm").read_text().strip() == name and alive(child):
                return True
        except OSError:  # gone meanwhile
            continue
    return False


def mentioned(pid: int, text: str) -> bool:
    """Whether a running descendant of ``pid`` has ``text`` in its command line."""
    return not set(processes_mentioning(text)).isdisjoint(descendants(pid))


def assert_stopped_cleanly(
    stopped: Stopped,
    signum: int,
    under: Path,
    *,
    logs_on_stderr: bool = False,
    in_process: bool = False,
) -> None:
    """Exit 128 + ``signum`` with one line saying so, last (the only one
    unless the command logs on stderr), no traceback; no process of the
    command's left, none naming ``under``, and no mount at or below ``under``.
    ``in_process``: the signal came while the command worked in its own
    process, so it may have had no process of its own running then."""
    lines = [line for line in stopped.stderr.splitlines() if line.strip()]
    name = signal.Signals(signum).name
    assert stopped.code == 128 + signum, stopped.stderr
    assert lines and lines[-1].startswith(f"interrupted by {name}:"), stopped.stderr
    assert len(lines) == 1 or logs_on_stderr, stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert in_session(stopped.pid) == []
    assert stopped.started or in_process, "the command had started nothing when signalled"
    # The mount's guard may outlive its mount process by a moment (it checks
    # the mount is gone, then exits): wait for the command's processes to end.
    wait_for(
        lambda: not [pid for pid in stopped.started if alive(pid)],
        f"the processes the command started ({stopped.started}) to end",
        timeout=30,
    )
    assert processes_mentioning(str(under)) == []
    assert str(under) not in MOUNTINFO.read_text()
