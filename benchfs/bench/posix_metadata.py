"""mdtest's file phases by plain POSIX calls in a directory, one process per
rank: the reference side of ``benchfs bench metadata``.

Each rank works in its own directory (mdtest ``-u``) on ``items`` files:
create (``open(O_CREAT|O_EXCL|O_WRONLY)``, a write of ``write_bytes``,
``close``), ``stat``, read (``open``, a read of ``read_bytes``, ``close``)
and ``unlink``, one call after the other. Phases are separated by a
barrier; a phase's time is the first rank's start to the last rank's end,
as for the native workload. The loop is Python's ``os`` calls, so each
operation carries a few microseconds of interpreter time on top of the
system calls.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import queue
import time
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

from benchfs.errors import ToolError

PHASES = ("create", "stat", "read", "remove")


@dataclass(frozen=True)
class PosixMetadataCase:
    ranks: int
    items: int
    write_bytes: int = 0
    read_bytes: int = 0


def _rank(case: PosixMetadataCase, root: str, rank: int, barrier: Barrier, out: Any) -> None:
    directory = Path(root) / f"tree.{rank}"
    directory.mkdir(mode=0o700)
    paths = [str(directory / f"file.mdtest.{rank}.{i}") for i in range(case.items)]
    data = b"m" * case.write_bytes
    spans: dict[str, tuple[int, int]] = {}
    for phase in PHASES:
        barrier.wait()
        start = time.time_ns()
        if phase == "create":
            for path in paths:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
                if data:
                    os.write(fd, data)
                os.close(fd)
        elif phase == "stat":
            for path in paths:
                os.stat(path)
        elif phase == "read":
            for path in paths:
                fd = os.open(path, os.O_RDONLY)
                if case.read_bytes:
                    os.read(fd, case.read_bytes)
                os.close(fd)
        else:
            for path in paths:
                os.unlink(path)
        spans[phase] = (start, time.time_ns())
    directory.rmdir()
    out.put((rank, spans))


def run_posix_metadata(
    case: PosixMetadataCase, root: Path, timeout_s: float = 1800
) -> dict[str, float]:
    """Operations per second of all ranks per phase (``create`` ... ``remove``)."""
    context = mp.get_context("spawn")
    barrier = context.Barrier(case.ranks)
    out = context.Queue()
    processes = [
        context.Process(target=_rank, args=(case, str(root), rank, barrier, out))
        for rank in range(case.ranks)
    ]
    for process in processes:
        process.start()
    results: list[tuple[int, dict[str, tuple[int, int]]]] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(results) < case.ranks:
            failed = [p.exitcode for p in processes if p.exitcode]
            if failed:  # the others would wait at the next barrier for ever
                raise ToolError(f"POSIX metadata ranks in {root} failed (exit codes {failed})")
            if time.monotonic() > deadline:
                raise ToolError(f"POSIX metadata ranks in {root} took over {timeout_s:g} s")
            with contextlib.suppress(queue.Empty):
                results.append(out.get(timeout=0.5))
    finally:
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()
    rates: dict[str, float] = {}
    for phase in PHASES:
        starts = [spans[phase][0] for _, spans in results]
        ends = [spans[phase][1] for _, spans in results]
        span_s = (max(ends) - min(starts)) / 1e9
        rates[phase] = case.ranks * case.items / span_s if span_s > 0 else 0.0
    return rates
