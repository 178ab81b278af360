"""The BenchFS mounts of this process's mount namespace (``/proc/self/mountinfo``,
parsed by ``benchfs.tools.mountinfo``)."""

from __future__ import annotations

import os
from pathlib import Path

from benchfs.tools.mountinfo import BENCHFS_FS_TYPE as FS_TYPE
from benchfs.tools.mountinfo import MOUNTINFO, MountEntry, parse_mountinfo

__all__ = ["FS_TYPE", "MOUNTINFO", "MountEntry", "find_mount", "parse_mountinfo"]


def find_mount(path: Path) -> MountEntry | None:
    """The mount whose mount point is ``path`` (the last one mounted there)."""
    target = os.path.realpath(path)
    found = None
    for entry in parse_mountinfo(MOUNTINFO.read_text()):
        if entry.mount_point == target:
            found = entry
    return found
