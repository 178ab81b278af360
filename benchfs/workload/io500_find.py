"""The timestamp and find steps of the IO500 suite run with IOR and mdtest
(``suite.tool = "ior"``), over a directory of a mounted file system: here
on a ``posix:`` target, or on the host whose mount the tools used
(``python -m benchfs.node.workdir``). One process, as the reference's
external find."""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from benchfs.workload.io500_rank import ROOT, TIMESTAMP, scan_level
from benchfs.workload.targets import PosixTarget


class FindCount(BaseModel):
    """What find saw: files scanned, files matching IO500's criteria, seconds taken
    (the line ``benchfs.node.workdir`` prints)."""

    model_config = ConfigDict(frozen=True)

    scanned: int
    found: int
    elapsed_s: float


def stamp(directory: Path) -> int:
    """The reference's timestamp file beside the suite's tree; its mtime (ns)
    is find's newer-than time."""
    target = PosixTarget(directory, direct=False)
    target.touch(TIMESTAMP)
    return target.attributes(TIMESTAMP)[1]


def find_tree(directory: Path, newer_than_ns: int) -> FindCount:
    """find over the suite's tree (``directory/io500``), level by level."""
    target = PosixTarget(directory, direct=False)
    scanned = found = 0
    started = time.monotonic()
    level = [ROOT]
    while level:
        level, files, matched = scan_level(target, level, newer_than_ns)
        scanned, found = scanned + files, found + matched
    return FindCount(scanned=scanned, found=found, elapsed_s=time.monotonic() - started)
