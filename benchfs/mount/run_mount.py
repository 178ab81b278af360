"""One node's mount of a run's cluster (``workload.interface = "mount"``),
served by the node program ``python -m benchfs.node.mount``.

The mount point is made here, private (0700), and is the run's own. Once
this host's ``/proc/self/mountinfo`` shows the BenchFS mount and a
``stat`` through it answers, a ready record (``MountReady``, JSON) is
written for the orchestrator, which waits for one per node: readiness is
judged on the host, and in the mount namespace, where the ranks will use
the mount. On SIGTERM or SIGINT the engine unmounts and returns; what is
left (a mount the engine could not take down) is unmounted with
``fusermount3`` and the mount point removed.

Should the process that started it die (the orchestrator, or the launcher
job's daemon on this host) and the engine not end the mount within
``ORPHAN_GRACE_S`` (programs blocked on requests to daemons that died with
it), the program detaches the mount (``fusermount3 -u -z``) and exits: closing
its FUSE device ends the connection and the blocked programs get errors.
No mount outlives its run for want of someone to stop it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter

from benchfs.cluster.private import make_private_dir
from benchfs.mount.cleanup import unmount_all_under, unmount_now
from benchfs.mount.control import serve_in_foreground
from benchfs.mount.mountinfo import find_mount
from benchfs.mount.settings import MountSettings
from benchfs.results.atomic import write_bytes_atomic

POLL_S = 0.02
# A stat through a live mount answers in milliseconds.
PROBE_S = 5.0
# Beyond the engine's own drain after SIGTERM (10 s).
ORPHAN_GRACE_S = 15.0


@dataclass(frozen=True)
class MountReady:
    """A node's mount is live: written by the mount program, read by the orchestrator."""

    node: str
    hostname: str
    pid: int
    mount_point: str
    fs_type: str
    source: str


# The ready record as JSON, one shape for its writer and its reader.
READY: TypeAdapter[MountReady] = TypeAdapter(MountReady)


def _announce_when_mounted(
    node: str, mount_point: Path, ready_file: Path, stop: threading.Event
) -> None:
    """Write the ready record once the mount is in this host's mountinfo and answers."""
    while not stop.wait(POLL_S):
        entry = find_mount(mount_point)
        if entry is None or not entry.is_benchfs:
            continue
        if not _answers(mount_point):
            continue
        ready = MountReady(
            node, socket.gethostname(), os.getpid(), entry.mount_point, entry.fs_type, entry.source
        )
        write_bytes_atomic(ready_file, READY.dump_json(ready, indent=2))
        return


def _answers(mount_point: Path) -> bool:
    """Whether a ``stat`` through the mount is served, asked by a child
    process: a request from this process, the one serving the mount, would
    leave it unkillable if a SIGKILL landed between the request's read and
    its answer (the thread waiting on it never wakes, so the FUSE device
    is never closed)."""
    try:
        done = subprocess.run(
            ["stat", "--", str(mount_point)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=PROBE_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _exit_when_orphaned(node: str, mount_point: Path, stop: threading.Event) -> None:
    """Detach the mount and exit if the parent died and the mount did not end in time."""
    parent = os.getppid()
    while not stop.wait(0.2):
        if os.getppid() != parent:
            if not stop.wait(ORPHAN_GRACE_S):
                # Lazily: programs may hold files open on it.
                problem = unmount_now(mount_point, lazy=True)
                print(
                    f"benchfs mount {node}: the process that started it is gone and the "
                    f"mount did not end within {ORPHAN_GRACE_S:g} s: "
                    f"{problem or 'detached it'}; exiting",
                    file=sys.stderr,
                    flush=True,
                )
                os._exit(1)
            return


def serve_run_mount(
    node: str, registry_dir: Path, mount_point: Path, ready_file: Path, settings: MountSettings
) -> str:
    """Mount the cluster of ``registry_dir`` at ``mount_point`` (made here),
    announce it in ``ready_file`` once live, serve until SIGTERM/SIGINT, and
    leave no mount, mount point or ready record behind; how it ended."""
    make_private_dir(mount_point.parent)
    make_private_dir(mount_point, exist_ok=False)
    stop = threading.Event()
    watcher = threading.Thread(
        target=_announce_when_mounted,
        args=(node, mount_point, ready_file, stop),
        name="mount-ready",
        daemon=True,
    )
    watcher.start()
    orphan = threading.Thread(
        target=_exit_when_orphaned, args=(node, mount_point, stop), name="mount-orphan", daemon=True
    )
    orphan.start()
    try:
        return serve_in_foreground(registry_dir, mount_point, settings)
    finally:
        stop.set()
        watcher.join()
        orphan.join()
        ready_file.unlink(missing_ok=True)
        _, problems = unmount_all_under(mount_point)
        if not problems:
            with contextlib.suppress(OSError):
                mount_point.rmdir()
