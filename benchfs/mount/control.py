"""Serving a mount, starting one in the background, and unmounting."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import benchfs_native as bn
from benchfs.cluster.deadline import wait_until
from benchfs.cluster.processes import ManagedProcess, describe_status, kill_group, start_process
from benchfs.errors import ConfigError, LaunchError, ToolError
from benchfs.mount.mountinfo import find_mount
from benchfs.mount.settings import MountSettings

FUSERMOUNT = "fusermount3"
#: Beyond the connect deadline: the time mounting itself may take.
MOUNT_GRACE_S = 30.0


def check_paths(registry: Path, mountpoint: Path) -> None:
    """One-line errors naming a registry or mount point that cannot serve."""
    if not registry.is_dir():
        raise ConfigError(f"--registry {registry}: not a directory")
    if not mountpoint.is_dir():
        raise ConfigError(f"{mountpoint}: the mount point is not a directory")
    entry = find_mount(mountpoint)
    if entry is not None and entry.is_benchfs:
        raise ConfigError(f"{mountpoint}: a BenchFS mount is already there")


def serve_in_foreground(registry: Path, mountpoint: Path, settings: MountSettings) -> str:
    """Serve the mount until it is unmounted or SIGINT/SIGTERM; returns how it ended.

    A guard process unmounts the mount should this process die without
    unmounting it (benchfs/mount/guard.py)."""
    # Here, not at the top: ``python -m benchfs.mount.guard`` runs the module
    # as __main__, which must not have been imported by the package already.
    from benchfs.mount.guard import MountGuard, announce_when_mounted

    check_paths(registry, mountpoint)
    # Before the FUSE device is opened: the guard must not hold it.
    guard = MountGuard(mountpoint)
    stop = threading.Event()
    announcer = threading.Thread(
        target=announce_when_mounted,
        args=(guard, mountpoint, stop),
        name="mount-guard",
        daemon=True,
    )
    announcer.start()
    try:
        return bn.serve_mount(str(registry), str(mountpoint), **settings.engine_kwargs())
    finally:
        stop.set()
        announcer.join()
        guard.close()


def mount_in_background(
    registry: Path,
    mountpoint: Path,
    settings: MountSettings,
    log: Path,
    *,
    start: Callable[..., ManagedProcess] = start_process,
) -> ManagedProcess:
    """Start ``benchfs mount --foreground`` in its own session and return once
    the mount is live; on failure the error names the log. ``start`` starts
    the process (``Lifecycle.start``: the scope that stops it)."""
    check_paths(registry, mountpoint)
    argv = [
        sys.executable,
        "-m",
        "benchfs",
        "mount",
        "--registry",
        str(registry),
        str(mountpoint),
        "--foreground",
        *settings.cli_args(),
    ]
    process = start(argv, name="benchfs mount", stdout=log, stderr=subprocess.STDOUT)
    process.close_files()

    def pending() -> str | None:
        entry = find_mount(mountpoint)
        return None if entry is not None and entry.is_benchfs else f"no mount at {mountpoint}"

    try:
        wait_until(
            pending,
            deadline_s=settings.connect_deadline_s + MOUNT_GRACE_S,
            what=f"the mount at {mountpoint}",
            watch=[process],
        )
    except BaseException as error:  # a signal too: no mount appears after the caller left
        code = process.returncode
        if code is None:
            kill_group(process)
        if not isinstance(error, LaunchError):
            raise
        why = describe_status(code) if code is not None else "did not mount in time"
        raise LaunchError(f"benchfs mount at {mountpoint} {why}; see {log}") from error
    return process


def unmount(mountpoint: Path) -> None:
    """Unmount a BenchFS mount (``fusermount3 -u``); anything else is refused."""
    entry = find_mount(mountpoint)
    if entry is None:
        raise ConfigError(f"{mountpoint}: not a mount point")
    if not entry.is_benchfs:
        raise ConfigError(f"{mountpoint}: a {entry.fs_type} mount, not a BenchFS mount")
    program = shutil.which(FUSERMOUNT)
    if program is None:
        raise ToolError(f"{FUSERMOUNT} not found: install the fuse3 package")
    done = subprocess.run(
        [program, "-u", entry.mount_point], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"
        raise ToolError(f"{FUSERMOUNT} -u {mountpoint}: {detail}")
