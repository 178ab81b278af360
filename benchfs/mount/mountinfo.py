"""The mounts of this process's mount namespace (``/proc/self/mountinfo``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")
#: The file system type of a BenchFS mount (FUSE with subtype ``benchfs``).
FS_TYPE = "fuse.benchfs"


@dataclass(frozen=True)
class MountEntry:
    mountpoint: str
    fs_type: str
    source: str

    @property
    def is_benchfs(self) -> bool:
        return self.fs_type == FS_TYPE


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    out = []
    i = 0
    while i < len(field):
        code = field[i + 1 : i + 4]
        if field[i] == "\\" and len(code) == 3 and code.isdigit():
            out.append(chr(int(code, 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[MountEntry]:
    entries = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        sep = fields.index("-")
        if len(fields) < sep + 3 or len(fields) < 5:
            continue
        entries.append(
            MountEntry(
                mountpoint=_unescape(fields[4]),
                fs_type=fields[sep + 1],
                source=_unescape(fields[sep + 2]),
            )
        )
    return entries


def find_mount(path: Path) -> MountEntry | None:
    """The mount whose mount point is ``path`` (the last one mounted there)."""
    target = os.path.realpath(path)
    found = None
    for entry in parse_mountinfo(MOUNTINFO.read_text()):
        if entry.mountpoint == target:
            found = entry
    return found
