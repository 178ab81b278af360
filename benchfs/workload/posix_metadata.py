"""mdtest's file phases on any mounted file system: the counterpart of the
engine's ``Client.run_metadata_phase`` for a ``posix:PATH`` target.

The same files (``<prefix>/tree.<rank>/file.mdtest.<rank>.<i>``, or
``tree.shared`` for one directory of all ranks), the same operations one
after the other (create: ``open(O_CREAT|O_EXCL|O_WRONLY)``, a write of
``write_bytes``, ``close``; stat; read: ``open``, a read of ``read_bytes``,
``close``; remove: ``unlink``), the same stonewall, progress record and
result keys. The loop is Python's ``os`` calls: each item carries a few
microseconds of interpreter time beside the system calls, which the
engine's loop does not.
"""

from __future__ import annotations

import os
import struct
import time
from array import array
from pathlib import Path
from typing import Any

PROGRESS_EVERY_NS = 200_000_000
_RECORD = struct.Struct("<QQ")  # bytes, items: as the engine writes its progress


def item_path(prefix: str, rank: int, item: int, unique_dir: bool) -> str:
    tree = f"tree.{rank}" if unique_dir else "tree.shared"
    return f"{prefix}/{tree}/file.mdtest.{rank}.{item}"


def _one(phase: str, path: str, data: bytes, read_bytes: int) -> int:
    """One item's operation; the bytes it moved."""
    if phase == "create":
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        try:
            return os.write(fd, data) if data else 0
        finally:
            os.close(fd)
    if phase == "stat":
        os.stat(path)
        return 0
    if phase == "read":
        fd = os.open(path, os.O_RDONLY)
        try:
            return len(os.read(fd, read_bytes)) if read_bytes else 0
        finally:
            os.close(fd)
    if phase == "remove":
        os.unlink(path)
        return 0
    raise ValueError(f"unknown metadata phase {phase!r}")


def run_posix_metadata_phase(
    directory: Path,
    *,
    phase: str,
    prefix: str,
    items: int,
    rank: int = 0,
    ranks: int = 1,
    first_item: int = 0,
    unique_dir: bool = True,
    write_bytes: int = 0,
    read_bytes: int = 0,
    stonewall_s: float = 0.0,
    progress_path: str | None = None,
) -> dict[str, Any]:
    """Items ``first_item..items`` of one rank's phase under ``directory``;
    the first item that fails raises (naming its path)."""
    del ranks  # the engine's signature; the file names need only this rank
    data = b"\x4d" * write_bytes
    latencies = array("Q")
    moved = 0
    start = time.time_ns()
    ends_ns = time.monotonic_ns() + int(stonewall_s * 1e9) if stonewall_s > 0 else None
    progress = open(progress_path, "wb", buffering=0) if progress_path else None  # noqa: SIM115
    next_report = 0
    stonewalled = False
    item = first_item
    try:
        while item < items:
            now = time.monotonic_ns()
            if ends_ns is not None and now >= ends_ns:
                stonewalled = True
                break
            path = str(directory / item_path(prefix, rank, item, unique_dir))
            began = time.perf_counter_ns()
            try:
                moved += _one(phase, path, data, read_bytes)
            except OSError as error:
                raise OSError(error.errno, f"{phase} {path}: {error.strerror}") from None
            latencies.append(time.perf_counter_ns() - began)
            item += 1
            if progress is not None and now >= next_report:
                progress.seek(0)
                progress.write(_RECORD.pack(moved, item - first_item))
                next_report = now + PROGRESS_EVERY_NS
        if progress is not None:
            progress.seek(0)
            progress.write(_RECORD.pack(moved, item - first_item))
    finally:
        if progress is not None:
            progress.close()
    end = time.time_ns()
    return {
        "phase": phase,
        "dir": str(directory / prefix),
        "ops": item - first_item,
        "items_reached": item,
        "bytes": moved,
        "start_unix_ns": start,
        "end_unix_ns": end,
        "elapsed_s": (end - start) / 1e9,
        "latency_ns": latencies.tobytes(),  # u64, this machine's (little) endianness
        "stonewalled": stonewalled,
        "rpcs": 0,
        "retries": 0,
    }
