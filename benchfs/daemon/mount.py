"""Serving one FUSE mount of a running cluster for a run
(``workload.interface = "mount"``); the engine does the work
(``benchfs_native.serve_mount``).

The mount point is made here, private (0700), and is the run's own. Once
this host's ``/proc/self/mountinfo`` shows the mount and a ``stat`` through
it answers, a ready record (``MountReady``, JSON) is written for the
orchestrator, which waits for one per node: so readiness is judged on the
host and in the mount namespace where the ranks will use the mount. On
SIGTERM or SIGINT the engine unmounts and returns; what is left (a mount
the engine could not take down) is unmounted with ``fusermount3`` and the
mount point removed.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchfs.cluster.mounts import mount_at, unmount_all_under
from benchfs.cluster.private import make_private_dir
from benchfs.errors import EngineError, LaunchError
from benchfs.results.atomic import write_json_atomic

POLL_S = 0.02


@dataclass(frozen=True)
class MountOptions:
    """What the run asks of every mount (``[mount]`` and the RPC deadline)."""

    threads: int
    attr_timeout_s: float
    entry_timeout_s: float
    rpc_deadline_s: float

    def serve_kwargs(self) -> dict[str, Any]:
        """The engine's keyword arguments: a run's mount is read-write and private."""
        return {
            "read_only": False,
            "allow_other": False,
            "threads": self.threads,
            "attr_timeout_s": self.attr_timeout_s,
            "entry_timeout_s": self.entry_timeout_s,
            "rpc_deadline_s": self.rpc_deadline_s,
        }


@dataclass(frozen=True)
class MountReady:
    """A node's mount is live: written by the mount program, read by the orchestrator."""

    node: str
    hostname: str
    pid: int
    mount_point: str
    fs_type: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _announce_when_mounted(
    node: str, mount_point: Path, ready_file: Path, stop: threading.Event
) -> None:
    """Write the ready record once the mount is in this host's mountinfo and answers."""
    while not stop.wait(POLL_S):
        mount = mount_at(mount_point)
        if mount is None or not mount.is_fuse:
            continue
        try:
            os.stat(mount_point)  # a request through the mount: it is served
        except OSError:
            continue
        ready = MountReady(
            node, socket.gethostname(), os.getpid(), str(mount_point), mount.fs_type, mount.source
        )
        write_json_atomic(ready_file, ready.to_json())
        return


def serve_mount_for_run(
    node: str, registry_dir: Path, mount_point: Path, ready_file: Path, options: MountOptions
) -> None:
    """Mount the cluster of ``registry_dir`` at ``mount_point`` (made here),
    announce it in ``ready_file`` once live, serve until SIGTERM/SIGINT,
    and leave no mount, mount point or ready record behind."""
    import benchfs_native

    serve = getattr(benchfs_native, "serve_mount", None)
    if serve is None:
        raise LaunchError(
            f"mount {node}: this build of benchfs_native has no FUSE mount (serve_mount)"
        )
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
    try:
        serve(str(registry_dir), str(mount_point), **options.serve_kwargs())
    except OSError as error:
        detail = error.strerror or str(error)
        raise EngineError(error.errno or 0, f"mount {node} at {mount_point}: {detail}") from error
    finally:
        stop.set()
        watcher.join()
        ready_file.unlink(missing_ok=True)
        _, problems = unmount_all_under(mount_point)
        if not problems:
            with contextlib.suppress(OSError):
                mount_point.rmdir()
