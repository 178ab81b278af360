"""A scope that owns everything a run starts and guarantees its cleanup.

    with Lifecycle(grace_s=10, shm_prefix="benchfs-1234-") as life:
        daemon = life.start(argv, name="daemon@n1")
        scratch = life.temp_dir("benchfs-")
        ...

On leaving the scope, by success, error, Ctrl-C (KeyboardInterrupt) or
SIGTERM/SIGHUP (``Terminated``): processes are stopped (SIGTERM, then SIGKILL
after ``grace_s``), ``on_exit`` callbacks run newest first, registered paths
and temp dirs are removed, and shared-memory files with the prefix are
deleted. Signals that arrive during cleanup are held until it is done.

A scope also remembers the signal it caught: code that turns every exception
into one of its own (a pybind11 module's import reports any failure as
``ImportError: initialization failed``) can swallow the ``Terminated``, and
the caller may carry on. So no new scope opens (``raise_if_stopped``, which
tools call before they start too) and no scope ends quietly once a stop was
asked for.
"""

from __future__ import annotations

import functools
import logging
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Protocol

from benchfs.cluster.private import check_private_dir
from benchfs.cluster.processes import (
    HELD_SIGNALS,
    ManagedProcess,
    signals_held,
    start_process,
    stop_processes,
)
from benchfs.cluster.stuck import StuckOutput
from benchfs.errors import BenchfsError

log = logging.getLogger(__name__)

SHM_DIR = Path("/dev/shm")
HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

# The signals caught by each open scope that handles them, outermost first.
_open_scopes: list[list[int]] = []


class LoggedCommand(Protocol):
    """A process to start whose output (stdout and stderr) goes to one log."""

    @property
    def name(self) -> str: ...
    @property
    def argv(self) -> list[str]: ...
    @property
    def log_name(self) -> str: ...


class Terminated(BaseException):
    """The process was asked to stop by a signal; unwinds like KeyboardInterrupt."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        # What the cleanup on the way out could not do (``Lifecycle.cleanup_errors``).
        self.left: list[str] = []
        super().__init__(f"terminated by {signal.Signals(signum).name}")


def stop_requested() -> int | None:
    """The signal an open scope caught, None when no stop was asked for."""
    return next((caught[0] for caught in _open_scopes if caught), None)


def raise_if_stopped() -> None:
    """``Terminated`` when a stop was asked for: before new work starts."""
    signum = stop_requested()
    if signum is not None:
        raise Terminated(signum)


def remove_shm_files(prefix: str, shm_dir: Path = SHM_DIR) -> list[Path]:
    """Delete files in ``shm_dir`` whose names start with ``prefix``; the removed paths."""
    if len(prefix) < 3 or "/" in prefix:
        raise BenchfsError(f"shared-memory prefix {prefix!r} is too broad to delete by")
    removed = []
    for path in sorted(shm_dir.glob(f"{prefix}*")):
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except IsADirectoryError:
            shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


class Lifecycle:
    def __init__(
        self,
        *,
        grace_s: float = 10.0,
        shm_prefix: str | None = None,
        shm_dir: Path = SHM_DIR,
        handle_signals: bool = True,
    ) -> None:
        if shm_prefix is not None and (len(shm_prefix) < 3 or "/" in shm_prefix):
            raise BenchfsError(f"shared-memory prefix {shm_prefix!r} is too broad to delete by")
        self.grace_s = grace_s
        self.shm_prefix = shm_prefix
        self.shm_dir = shm_dir
        self.processes: list[ManagedProcess] = []
        self.cleanup_errors: list[str] = []
        self._paths: list[Path] = []
        self._callbacks: list[Callable[[], object]] = []
        self._handle_signals = handle_signals
        self._previous: dict[int, Any] = {}
        self._held: list[int] = []
        self._caught: list[int] = []

    def start(self, argv: Sequence[str], *, name: str, **options: Any) -> ManagedProcess:
        """Start a process (``start_process`` options) that this scope will stop,
        and that the kernel stops if this process dies without cleaning up."""
        if threading.current_thread() is threading.main_thread():
            options.setdefault("die_with_parent", True)
        # A signal waits until the process is recorded, so that cleanup stops it.
        with signals_held():
            process = start_process(argv, name=name, **options)
            self.processes.append(process)
        return process

    def start_logged(
        self,
        commands: Iterable[LoggedCommand],
        log_dir: Path,
        env: Mapping[str, str] | None = None,
        stuck_when: StuckOutput | None = None,
    ) -> list[ManagedProcess]:
        """One process per command (see ``start``), its output in
        ``log_dir / command.log_name``."""
        return [
            self.start(command.argv, name=command.name, env=env,
                       stdout=log_dir / command.log_name, stderr=subprocess.STDOUT,
                       stuck_when=stuck_when)
            for command in commands
        ]  # fmt: skip

    def temp_dir(self, prefix: str = "benchfs-", parent: Path | None = None) -> Path:
        """A new private directory (in ``parent``, default the temp dir), removed at
        exit; refused in a ``parent`` another user could replace (``check_private_dir``)."""
        check_private_dir(Path(tempfile.gettempdir() if parent is None else parent))
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        self._paths.append(path)
        return path

    def remove_at_exit(self, path: Path) -> Path:
        self._paths.append(path)
        return path

    def on_exit(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` at exit, after processes stop (e.g. collect traces)."""
        self._callbacks.append(callback)

    def __enter__(self) -> Lifecycle:
        raise_if_stopped()
        if self._handle_signals and threading.current_thread() is threading.main_thread():
            for signum in HANDLED_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._raise_terminated)
            _open_scopes.append(self._caught)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        held = self._hold_signals()
        try:
            self.cleanup()
        finally:
            if any(caught is self._caught for caught in _open_scopes):  # opened on the main thread
                _open_scopes[:] = [c for c in _open_scopes if c is not self._caught]
            try:
                self._restore_signals(held)
            except Terminated as during_cleanup:
                during_cleanup.left.extend(self.cleanup_errors)
                raise
        if isinstance(value, Terminated):
            value.left.extend(self.cleanup_errors)
        elif self._caught and not isinstance(value, KeyboardInterrupt):
            swallowed = Terminated(self._caught[0])  # by code between the handler and here
            swallowed.left.extend(self.cleanup_errors)
            raise swallowed

    def cleanup(self) -> None:
        """Everything ``__exit__`` does; safe to call more than once."""
        self._attempt("stop processes", lambda: stop_processes(self.processes, self.grace_s))
        while self._callbacks:
            callback = self._callbacks.pop()
            self._attempt(_what_it_does(callback), callback)
        while self._paths:
            path = self._paths.pop()
            self._attempt(f"remove {path}", functools.partial(_remove, path))
        if self.shm_prefix is not None:
            prefix = self.shm_prefix
            self._attempt("remove shared memory", lambda: remove_shm_files(prefix, self.shm_dir))

    def _attempt(self, what: str, action: Callable[[], object]) -> None:
        try:
            action()
        except Exception as error:  # keep cleaning; report everything that failed
            message = f"cleanup: {what}: {error}"
            log.warning(message)
            self.cleanup_errors.append(message)

    def _raise_terminated(self, signum: int, frame: FrameType | None) -> None:
        self._caught.append(signum)
        raise Terminated(signum)

    def _hold_signals(self) -> bool:
        if threading.current_thread() is not threading.main_thread():
            return False
        for signum in HELD_SIGNALS:
            previous = signal.signal(signum, self._note_signal)
            self._previous.setdefault(signum, previous)
        return True

    def _note_signal(self, signum: int, frame: FrameType | None) -> None:
        self._held.append(signum)

    def _restore_signals(self, held: bool) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()
        if held and self._held:
            signum = self._held[0]
            self._held.clear()
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise Terminated(signum)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _what_it_does(callback: Callable[[], object]) -> str:
    """A cleanup step in words, for its error: the first line of its docstring,
    else its name (``clean_remaining`` -> ``clean remaining``), never a repr."""
    function = getattr(callback, "func", callback)  # functools.partial
    doc = (getattr(function, "__doc__", None) or "").strip().splitlines()
    if doc and getattr(function, "__module__", "") != "builtins":
        return doc[0].rstrip(".")
    name = getattr(function, "__name__", "")
    if not name.isidentifier():  # a lambda
        return "an exit step"
    return name.strip("_").replace("_", " ")
