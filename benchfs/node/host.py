"""``python -m benchfs.node.host``: the per-host helper of a run, once on
every host through the launcher (``benchfs.launchers.programs.host_job``):

- ``stop REGISTRY_DIR DEADLINE_S [PATH...]``: SIGTERM the daemons
  registered from this host and wait until they have exited (SIGKILL
  those that outlive the deadline), then ``clean PATH...``: the stop and
  the clean-up in one launcher job, whatever the daemons did;
- ``clean PATH...``: remove the run's directories on this host, after
  unmounting any FUSE mount left under them (a run's mounts of BenchFS);
- ``sweep TOKEN PATH...``: what ``benchfs clean`` asks of the hosts of a
  run whose orchestrator died: stop this user's processes naming the run's
  marker (``benchfs-TOKEN``, written ``{run}`` in the paths so that the
  sweep's own command lines never name it), remove its shared-memory
  files, then ``clean PATH...``; one line says what was done here.

Launchers whose processes all run here need none of this
(``Capabilities.needs_host_helper``): the orchestrator does it itself.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import benchfs_native
from benchfs.cluster.lifecycle import SHM_DIR, remove_shm_files
from benchfs.mount.cleanup import mounts_under, unmount_all_under
from benchfs.node import run_program
from benchfs.run.leftovers import SWEEP_RUN, stop_processes_naming

# Only paths holding this marker are removed: a wrong argument cannot delete a home.
RUN_MARKER = "benchfs-"
USAGE = (
    "usage: python -m benchfs.node.host"
    " stop REGISTRY_DIR DEADLINE_S [PATH...] | clean PATH... | sweep TOKEN PATH..."
)
# Past the deadline, before a daemon is killed (the orchestrator's own margin,
# ``benchfs.run.cluster.STOP_MARGIN_S``), and after SIGKILL, before its files
# are removed anyway.
KILL_AFTER_S = 5.0
KILL_WAIT_S = 5.0


def say(line: str) -> None:
    """One line on stderr naming this host: the job's lines of every host share one log."""
    print(f"{socket.gethostname()}: {line}", file=sys.stderr, flush=True)


def _is_daemon(pid: int) -> bool:
    """Whether ``pid`` runs a BenchFS daemon (the node program or ``benchfs daemon``)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"benchfs.node.daemon" in cmdline or (b"benchfs" in cmdline and b"daemon" in cmdline)


def local_daemon_pids(registry_dir: Path, hostname: str | None = None) -> list[int]:
    """Pids of the daemons that registered from this host and still run."""
    hostname = hostname or socket.gethostname()
    try:
        records = benchfs_native.read_registry(str(registry_dir))
    except FileNotFoundError:
        return []
    return [r["pid"] for r in records if r["host"] == hostname and _is_daemon(r["pid"])]


def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    """The daemons of ``pids`` still running after up to ``seconds``."""
    stop_at = time.monotonic() + seconds
    while pids and time.monotonic() < stop_at:
        time.sleep(0.05)
        pids = [pid for pid in pids if _is_daemon(pid)]
    return pids


def _signal(pids: list[int], signum: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def stop_daemons(registry_dir: Path, deadline_s: float) -> int:
    """SIGTERM this host's daemons; 0 when all exited within the deadline.
    Those still running a margin later are killed, so that their files can go."""
    pids = local_daemon_pids(registry_dir)
    _signal(pids, signal.SIGTERM)
    left = _wait_gone(pids, deadline_s)
    if not left:
        return 0
    for pid in left:
        say(f"daemon pid {pid} still running after {deadline_s:g} s")
    left = _wait_gone(left, KILL_AFTER_S)
    _signal(left, signal.SIGKILL)
    for pid in _wait_gone(left, KILL_WAIT_S):
        say(f"daemon pid {pid} still running {KILL_WAIT_S:g} s after SIGKILL")
    return 1


def stop_and_clean(registry_dir: Path, deadline_s: float, paths: list[str]) -> int:
    """The daemons' stop, then the run's paths removed, even when a daemon
    was already gone or would not stop."""
    stopped = stop_daemons(registry_dir, deadline_s)
    return clean(paths) or stopped


def clean(paths: Iterable[str], removed: list[str] | None = None) -> int:
    """Remove ``paths`` (run directories only); those that existed go into ``removed``."""
    failed = 0
    for text in paths:
        path = Path(text)
        if RUN_MARKER not in path.name:
            say(f"not removing {path}: not a run directory")
            failed = 1
            continue
        _, problems = unmount_all_under(path)
        if problems or mounts_under(path):
            # Never delete through a mount: it would delete the file system's files.
            for problem in problems or [f"a mount under {path} stays"]:
                say(f"not removing {path}: {problem}")
            failed = 1
            continue
        try:
            shutil.rmtree(path)
            if removed is not None:
                removed.append(text)
        except FileNotFoundError:
            pass
        except OSError as error:
            say(f"cannot remove {path}: {error}")
            failed = 1
    return failed


def sweep(token: str, paths: list[str]) -> int:
    """A dead run's leftovers on this host: its processes, shared memory, paths."""
    if not token or "/" in token or SWEEP_RUN in token:
        print(f"not sweeping by {token!r}: not a run's token", file=sys.stderr)
        return 2
    marker = f"{RUN_MARKER}{token}"
    paths = [path.replace(SWEEP_RUN, marker) for path in paths]
    stopped = stop_processes_naming(marker)
    shm = remove_shm_files(marker) if SHM_DIR.is_dir() else []
    removed: list[str] = []
    failed = clean(paths, removed)
    print(
        f"{socket.gethostname()}: stopped {len(stopped)} processes"
        f"{' (' + ', '.join(stopped) + ')' if stopped else ''}, "
        f"removed {len(removed)} paths and {len(shm)} shared-memory files",
        flush=True,
    )
    return failed


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv

    def body() -> int:
        if len(args) >= 3 and args[0] == "stop":
            return stop_and_clean(Path(args[1]), float(args[2]), args[3:])
        if len(args) >= 1 and args[0] == "clean":
            return clean(args[1:])
        if len(args) >= 2 and args[0] == "sweep":
            return sweep(args[1], args[2:])
        print(USAGE, file=sys.stderr)
        return 2

    return run_program(body, prefix=f"benchfs node {socket.gethostname()}: ")


if __name__ == "__main__":
    sys.exit(main())
