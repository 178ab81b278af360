"""The BenchFS mounts of this process's mount namespace (``/proc/self/mountinfo``,
parsed by ``benchfs.tools.mountinfo``)."""

from __future__ import annotations

import os
from pathlib import Path

from benchfs.tools.mountinfo import BENCHFS_FS_TYPE as FS_TYPE
from benchfs.tools.mountinfo import MOUNTINFO, MountEntry, parse_mountinfo

__all__ = [
    "FS_TYPE",
    "MOUNTINFO",
    "MountEntry",
    "canonical",
    "find_mount",
    "parse_mountinfo",
]


def find_mount(path: Path) -> MountEntry | None:
    """The mount whose mount point is ``path`` (the last one mounted there)."""
    target = str(canonical(path))
    found = None
    for entry in parse_mountinfo(MOUNTINFO.read_text()):
        if entry.mount_point == target:
            found = entry
    return found


def canonical(path: Path) -> Path:
    """``path`` as mountinfo spells a mount point there: its parent's links
    resolved, never ``path`` itself. A dead mount point fails every access;
    and resolving a live one sends a request to the file system mounted
    there, which, from the process serving it, a SIGKILL landing between
    the request's read and its answer turns into a thread the kernel never
    wakes and a process that never dies."""
    path = Path(os.path.abspath(path))
    return Path(os.path.realpath(path.parent)) / path.name
