"""Every process BenchFS starts goes through ``start_process``: each in its
own process group, stopped with SIGTERM and, after a grace period, SIGKILL,
so nothing outlives a run.

The group matters: mpirun, srun and shells start children of their own, and
signalling only the direct child would leave those behind. fio goes further
and puts its job processes in sessions of their own: ``kill_group`` finds
those through /proc.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from benchfs.cluster.stuck import OutputWatch, StuckOutput
from benchfs.errors import BenchfsError, LaunchError

Ending = Literal["exited", "SIGTERM", "SIGKILL"]
Output = Path | int | IO[Any] | None

_PR_SET_PDEATHSIG = 1
# How often a wait on a watched process (``stuck_when``) reads its output.
_STUCK_POLL_S = 0.1
# The signals a command turns into an exception: Ctrl-C, and SIGTERM and
# SIGHUP in a Lifecycle.
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def process_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of launcher processes started here."""
    merged = dict(env)
    if os.geteuid() == 0:  # mpirun refuses root without both
        merged.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        merged.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return merged


@dataclass
class ManagedProcess:
    """A started process and how it ended (``ending`` is None while running)."""

    name: str
    argv: list[str]
    popen: subprocess.Popen[bytes]
    ending: Ending | None = None
    _files: list[IO[Any]] = field(default_factory=list, repr=False)
    watch: OutputWatch | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def describe(self) -> str:
        return f"{self.name} (pid {self.pid})"

    def stuck(self) -> str | None:
        """What its output said when it can no longer finish though it runs
        on (see ``benchfs.cluster.stuck``); None while nothing such was seen."""
        return None if self.watch is None else self.watch.check()

    def close_files(self) -> None:
        for handle in self._files:
            handle.close()
        self._files.clear()


def describe_status(code: int) -> str:
    """``exited with status 3`` or ``was killed by SIGKILL`` (Popen's negative codes)."""
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def start_process(
    argv: Sequence[str],
    *,
    name: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdout: Output = None,
    stderr: Output = None,
    die_with_parent: bool = False,
    error: type[BenchfsError] = LaunchError,
    missing: str | None = None,
    stuck_when: StuckOutput | None = None,
) -> ManagedProcess:
    """Start ``argv`` in a new session (its own process group), stdin closed.

    ``env`` is the full environment (None: inherit). ``stdout``/``stderr`` may
    be a Path (opened for writing), a file, ``subprocess.PIPE``,
    ``subprocess.STDOUT`` (stderr only), ``subprocess.DEVNULL`` or None.
    ``die_with_parent`` asks the kernel to SIGTERM the process if this one
    dies first (Linux; tied to the starting thread, so start from a thread
    that lives as long as the process should). When ``argv`` cannot be
    started, ``error`` is raised naming ``name`` and the program, or saying
    ``missing`` when the program is not there. ``stuck_when`` names the line
    of its output (files only) after which it never ends by itself: waits
    on it (``wait_process``, ``wait_until``) then end at once.
    """
    files: list[IO[Any]] = []
    targets: list[int | IO[Any] | None] = []
    for output in (stdout, stderr):
        if isinstance(output, Path):
            opened: IO[Any] = output.open("w+b")  # readable too, for ``stuck_when``
            files.append(opened)
            targets.append(opened)
        else:
            targets.append(output)
    popen: subprocess.Popen[bytes] | None = None
    try:
        with signals_held():
            popen = subprocess.Popen(
                list(argv),
                env=None if env is None else dict(env),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=targets[0],
                stderr=targets[1],
                start_new_session=True,
                preexec_fn=_die_with_parent if die_with_parent else None,
            )
    except OSError as failure:
        for opened in files:
            opened.close()
        if missing is not None and isinstance(failure, FileNotFoundError):
            raise error(missing) from failure
        raise error(f"{name}: cannot start {argv[0]!r}: {failure.strerror or failure}") from failure
    except BaseException:
        # A signal held while it started raised (Terminated, Ctrl-C): the
        # caller never gets the process, so nobody else could stop it.
        if popen is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(popen.pid, signal.SIGKILL)
            popen.wait()
        for opened in files:
            opened.close()
        raise
    written = [target for target in targets if target is not None and not isinstance(target, int)]
    watch = None if stuck_when is None else OutputWatch(stuck_when, written)
    return ManagedProcess(name, list(argv), popen, _files=files, watch=watch)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP only noted inside, then handed on leaving
    to the handlers they had (in the main thread, where Python runs them).

    Python runs a signal's handler wherever the main thread is, also inside
    ``Popen``'s at-fork callbacks (those of a ``preexec_fn``), which only
    print an exception ("Exception ignored in: ...") and go on: a SIGTERM
    that came while a process started was lost, and the run went on. Held,
    it arrives once the process is started (and, around the recording of
    it too, once the caller knows it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    previous: dict[int, Any] = {}
    try:
        for signum in HELD_SIGNALS:
            if signal.getsignal(signum) is not None:  # None: set outside Python, kept
                previous[signum] = signal.signal(signum, lambda s, _f: noted.append(s))
        yield
    finally:
        for held, handler in previous.items():
            signal.signal(held, handler)
        for arrived in dict.fromkeys(noted):
            signal.raise_signal(arrived)


# Loaded here, not in the forked child: dlopen there could wait forever on a
# lock another thread of the parent held at the fork (a live display's thread).
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl


def _die_with_parent() -> None:
    _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


def stop_processes(processes: Sequence[ManagedProcess], grace_s: float) -> None:
    """Stop all: SIGTERM to every group at once, SIGKILL to what is left after
    ``grace_s``. Returns when every process has been reaped and the rest of
    their groups has died."""
    if not processes:
        return
    for process in processes:
        if process.popen.poll() is None:
            _signal_group(process, signal.SIGTERM)
            process.ending = "SIGTERM"
        elif process.ending is None:
            process.ending = "exited"
    deadline = time.monotonic() + grace_s
    for process in processes:
        try:
            process.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.ending = "SIGKILL"
            process.popen.wait()
    # Children that ignored SIGTERM while their leader exited: finish them too.
    left = _group_members({process.pid for process in processes})
    for process in processes:
        _signal_group(process, signal.SIGKILL)
        process.close_files()
    _wait_gone(left)


def stop_process(process: ManagedProcess, grace_s: float) -> int:
    """Stop one process (see ``stop_processes``); its exit status."""
    stop_processes([process], grace_s)
    code = process.popen.returncode
    assert code is not None  # reaped by stop_processes
    return code


def wait_process(process: ManagedProcess, deadline_s: float) -> int:
    """Wait for a process to exit by itself; LaunchError naming it on the
    deadline, or as soon as its output says it cannot finish."""
    end = time.monotonic() + deadline_s
    while True:
        remaining = max(0.0, end - time.monotonic())
        try:
            poll = remaining if process.watch is None else min(remaining, _STUCK_POLL_S)
            code = process.popen.wait(timeout=poll)
            break
        except subprocess.TimeoutExpired:
            stuck = process.stuck()
            if stuck is not None:
                raise LaunchError(f"{process.describe()} cannot finish: {stuck}") from None
            if time.monotonic() >= end:
                raise LaunchError(
                    f"{process.describe()} still running after the {deadline_s:g} s deadline"
                ) from None
    if process.ending is None:
        process.ending = "exited"
    process.close_files()
    return code


def _signal_group(process: ManagedProcess, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)  # the leader's pid is the group id (new session)


def kill_group(process: ManagedProcess, grace_s: float = 3.0) -> None:
    """Stop a process and everything it started, even in sessions of their
    own, then reap it and close its pipes and files.

    Descendants are found through /proc before anything dies. SIGTERM first
    (fio then stops its jobs and removes its files), SIGKILL after ``grace_s``.
    """
    popen = process.popen
    pids = [popen.pid, *descendants(popen.pid)]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    _signal_group(process, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        popen.wait(timeout=grace_s)
    for pid in [popen.pid, *descendants(popen.pid), *pids]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _signal_group(process, signal.SIGKILL)
    if process.ending is None:
        process.ending = "SIGKILL"
    popen.communicate()
    _wait_gone(pids)
    process.close_files()


def proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first),
    None once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except OSError:
        return None
    # The command name is in parentheses and may contain spaces.
    return stat.rsplit(")", 1)[1].split()


def live_proc_stat(pid: int) -> list[str] | None:
    """As ``proc_stat``, None also for a process that has exited and waits
    to be reaped (a zombie)."""
    fields = proc_stat(pid)
    return None if fields is None or fields[0] in ("Z", "X") else fields


def process_ids() -> Iterator[int]:
    """The pid of every process in /proc (the one walk of it)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def _proc_stats() -> Iterator[tuple[int, list[str]]]:
    """``(pid, proc_stat(pid))`` of every process in /proc."""
    for pid in process_ids():
        if (fields := proc_stat(pid)) is not None:
            yield pid, fields


def _group_members(groups: set[int]) -> list[int]:
    """The processes of the process groups ``groups``, from /proc."""
    return [pid for pid, fields in _proc_stats() if int(fields[2]) in groups]


def _wait_gone(pids: Sequence[int], timeout_s: float = 10.0) -> None:
    """Until every one of ``pids``, sent SIGKILL, has died (at most
    ``timeout_s``): one in the middle of a disk I/O (fio with O_DIRECT) lives
    on until that I/O completes. A zombie counts as gone (its reaper is init
    or its own parent)."""
    deadline = time.monotonic() + timeout_s
    waiting = list(pids)
    while waiting and time.monotonic() < deadline:
        waiting = [pid for pid in waiting if live_proc_stat(pid) is not None]
        if waiting:
            time.sleep(0.005)


def descendants(pid: int) -> list[int]:
    """Every living descendant of ``pid`` (children first), from /proc."""
    children: dict[int, list[int]] = {}
    for child, fields in _proc_stats():
        children.setdefault(int(fields[1]), []).append(child)
    found: list[int] = []
    queue = [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found
