"""The lines of ``/proc/self/mountinfo`` (proc(5)), parsed once for every reader.

The mount's own code (``benchfs.mount``) looks for its FUSE mounts in it,
the diagnosis (``benchfs.tools.fsinfo``) for the mount and device behind a
directory; both read the same ``MountEntry``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")
#: The file system type of a BenchFS mount (FUSE with subtype ``benchfs``).
BENCHFS_FS_TYPE = "fuse.benchfs"


@dataclass(frozen=True)
class MountEntry:
    """One line of mountinfo, its paths unescaped."""

    major_minor: str
    mount_point: str
    fs_type: str
    source: str
    options: str
    super_options: str

    @property
    def is_benchfs(self) -> bool:
        return self.fs_type == BENCHFS_FS_TYPE


def parse_mountinfo(text: str) -> list[MountEntry]:
    """Every well-formed line of ``text``; a line without the ``-`` separator
    or its three fields after it is left out."""
    entries = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        dash = fields.index("-")
        if dash < 6 or len(fields) < dash + 3:
            continue
        entries.append(
            MountEntry(
                major_minor=fields[2],
                mount_point=_unescape(fields[4]),
                options=fields[5],
                fs_type=fields[dash + 1],
                source=_unescape(fields[dash + 2]),
                super_options=fields[dash + 3] if len(fields) > dash + 3 else "",
            )
        )
    return entries


def _unescape(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)
