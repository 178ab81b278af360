"""Leaving no BenchFS mount behind: the mounts under a directory, and
unmounting them with ``fusermount3``, lazily (``-z``) as the last resort.

A run that mounts BenchFS (``workload.interface = "mount"``) unmounts on
every exit path: the mount programs unmount themselves on SIGTERM, and
whatever is still mounted under the run's paths afterwards (a process
killed before it could, a mount whose process hangs) is unmounted here. A
dead FUSE mount must never stay: every access to it fails with "Transport
endpoint is not connected", and a directory holding a mount is never
deleted through it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from benchfs.mount.mountinfo import MOUNTINFO, MountEntry, canonical, find_mount, parse_mountinfo

FUSERMOUNT = "fusermount3"
UNMOUNT_DEADLINE_S = 30.0


def benchfs_mounts(text: str | None = None) -> list[MountEntry]:
    """This mount namespace's BenchFS mounts (of ``text``, a mountinfo, if given)."""
    if text is None:
        text = MOUNTINFO.read_text(errors="replace")
    return [entry for entry in parse_mountinfo(text) if entry.is_benchfs]


def mounts_under(path: Path, text: str | None = None) -> list[MountEntry]:
    """BenchFS mounts at or below ``path``, deepest first (the order to unmount in)."""
    root = canonical(path)
    found = [e for e in benchfs_mounts(text) if Path(e.mount_point).is_relative_to(root)]
    return sorted(found, key=lambda entry: len(Path(entry.mount_point).parts), reverse=True)


def unmount_now(mountpoint: Path, *, lazy: bool = False) -> str | None:
    """``fusermount3 -u [-z] MOUNTPOINT``; None when it is gone, else why not."""
    program = shutil.which(FUSERMOUNT)
    if program is None:
        return f"{FUSERMOUNT} not found: cannot unmount {mountpoint} (Debian package fuse3)"
    argv = [program, "-u", *(["-z"] if lazy else []), str(mountpoint)]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=UNMOUNT_DEADLINE_S, check=False
        )
    except subprocess.TimeoutExpired:
        return f"{' '.join(argv)} did not finish within {UNMOUNT_DEADLINE_S:g} s"
    if done.returncode != 0 and find_mount(mountpoint) is not None:
        return f"{' '.join(argv)}: {done.stderr.strip() or f'exit status {done.returncode}'}"
    return None


def unmount_all_under(path: Path) -> tuple[list[Path], list[str]]:
    """Unmount every BenchFS mount at or below ``path``: ``fusermount3 -u``,
    then ``-u -z`` for one that is busy or dead. The mount points
    unmounted, and the problems with those that stay mounted."""
    done: list[Path] = []
    problems: list[str] = []
    for entry in mounts_under(path):
        mountpoint = Path(entry.mount_point)
        problem = unmount_now(mountpoint)
        if problem is not None:
            lazy = unmount_now(mountpoint, lazy=True)
            if lazy is not None:
                problems.append(f"{problem}; lazily: {lazy}")
                continue
        done.append(mountpoint)
    return done, problems
