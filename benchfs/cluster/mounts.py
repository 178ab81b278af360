"""Mounts on this host as the kernel lists them (``/proc/self/mountinfo``),
and unmounting a FUSE mount with ``fusermount3``.

A run that mounts BenchFS (``workload.interface = "mount"``) unmounts on
every exit path: the mount processes unmount themselves on SIGTERM, and
whatever is still mounted under the run's paths afterwards (a process
killed before it could, a mount whose process hangs) is unmounted here,
lazily (``-z``) as the last resort. A dead FUSE mount must never stay:
every access to it fails with "Transport endpoint is not connected".
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from benchfs.errors import BenchfsError

MOUNTINFO = Path("/proc/self/mountinfo")
FUSERMOUNT = "fusermount3"
UNMOUNT_DEADLINE_S = 30.0


@dataclass(frozen=True)
class Mount:
    """One line of mountinfo: where, what file system type, from which source."""

    mount_point: Path
    fs_type: str
    source: str

    @property
    def is_fuse(self) -> bool:
        return self.fs_type == "fuse" or self.fs_type.startswith(("fuse.", "fuseblk"))


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    out, index = [], 0
    while index < len(field):
        if field[index] == "\\" and field[index + 1 : index + 4].isdigit():
            out.append(chr(int(field[index + 1 : index + 4], 8)))
            index += 4
        else:
            out.append(field[index])
            index += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[Mount]:
    """The mounts of a mountinfo text (proc(5)); malformed lines are skipped."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        if "-" not in fields[6:]:
            continue
        separator = fields.index("-", 6)
        if len(fields) < separator + 3 or len(fields) < 5:
            continue
        mounts.append(
            Mount(
                Path(_unescape(fields[4])),
                _unescape(fields[separator + 1]),
                _unescape(fields[separator + 2]),
            )
        )
    return mounts


def current_mounts(mountinfo: Path = MOUNTINFO) -> list[Mount]:
    """The mounts this process sees."""
    try:
        return parse_mountinfo(mountinfo.read_text(errors="replace"))
    except OSError as error:
        raise BenchfsError(f"{mountinfo}: cannot read: {error.strerror or error}") from error


def canonical(path: Path) -> Path:
    """``path`` as mountinfo spells it (links resolved), without touching
    ``path`` itself: a dead mount point fails every access."""
    path = Path(os.path.abspath(path))
    return Path(os.path.realpath(path.parent)) / path.name


def mount_at(path: Path, mounts: list[Mount] | None = None) -> Mount | None:
    """The mount whose mount point is ``path`` itself (the topmost one), or None."""
    target = canonical(path)
    found = [m for m in (current_mounts() if mounts is None else mounts) if m.mount_point == target]
    return found[-1] if found else None


def mounts_under(path: Path, mounts: list[Mount] | None = None) -> list[Mount]:
    """FUSE mounts at or below ``path``, deepest first (the order to unmount in)."""
    root = canonical(path)
    found = [
        m
        for m in (current_mounts() if mounts is None else mounts)
        if m.is_fuse and m.mount_point.is_relative_to(root)
    ]
    return sorted(found, key=lambda m: len(m.mount_point.parts), reverse=True)


def unmount(mount_point: Path, *, lazy: bool = False) -> str | None:
    """``fusermount3 -u [-z] MOUNT_POINT``; None when done, else why not."""
    program = shutil.which(FUSERMOUNT)
    if program is None:
        return f"{FUSERMOUNT} not found: cannot unmount {mount_point} (Debian package fuse3)"
    argv = [program, "-u", *(["-z"] if lazy else []), str(mount_point)]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=UNMOUNT_DEADLINE_S, check=False
        )
    except subprocess.TimeoutExpired:
        return f"{' '.join(argv)} did not finish within {UNMOUNT_DEADLINE_S:g} s"
    if done.returncode != 0 and mount_at(mount_point) is not None:
        return f"{' '.join(argv)}: {done.stderr.strip() or f'exit status {done.returncode}'}"
    return None


def unmount_all_under(path: Path) -> tuple[list[Path], list[str]]:
    """Unmount every FUSE mount at or below ``path``: ``fusermount3 -u``, then
    ``-u -z`` for one that is busy or dead. The mount points unmounted, and
    the problems with those that stay mounted."""
    done: list[Path] = []
    problems: list[str] = []
    for mount in mounts_under(path):
        problem = unmount(mount.mount_point)
        if problem is not None:
            lazy = unmount(mount.mount_point, lazy=True)
            if lazy is not None:
                problems.append(f"{problem}; lazily: {lazy}")
                continue
        done.append(mount.mount_point)
    return done, problems
