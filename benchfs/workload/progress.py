"""Live progress of a phase, read while it runs.

Each rank's engine overwrites a 16-byte record (bytes done, ops done; u64
little endian) about every 200 ms; rank 0 writes ``phase.json`` when a
phase starts and ends. Readers tolerate absent or half-written files: a
progress figure is advisory, the results come from the ranks at the end.
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import TypeAdapter, ValidationError

from benchfs.workload.spec import WorkloadSpec

RECORD = struct.Struct("<QQ")
State = Literal["running", "done"]


@dataclass(frozen=True)
class PhaseStatus:
    """The phase rank 0 is in, and since when (start of the phase while it
    runs, its end once done)."""

    repetition: int
    phase: str
    state: State
    since_unix_ns: int
    expected_bytes: int
    # Files of all ranks in a metadata phase (its progress counts files); 0 for data phases.
    expected_items: int = 0
    # With a stonewall the phase ends on time, long before ``expected_bytes``.
    stonewall_s: float = 0.0


# The phase file as JSON: written by rank 0, read by the orchestrator and the live view.
_STATUS: TypeAdapter[PhaseStatus] = TypeAdapter(PhaseStatus)


@dataclass(frozen=True)
class PhaseProgress:
    """Bytes and ops done so far by all ranks in the running phase."""

    status: PhaseStatus
    bytes: int
    ops: int
    # Since the status was written: the phase's run time while it runs.
    elapsed_s: float

    @property
    def bw_mib_s(self) -> float:
        return self.bytes / (1024 * 1024) / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.elapsed_s if self.elapsed_s > 0 else 0.0


def read_record(path: Path) -> tuple[int, int] | None:
    """(bytes, ops) from one progress file, None while absent or short."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if len(data) < RECORD.size:
        return None
    done_bytes, done_ops = RECORD.unpack_from(data)
    return int(done_bytes), int(done_ops)


def write_status(path: Path, status: PhaseStatus) -> None:
    """Replace the phase file (rename, so a reader never sees half of it)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    temp.write_bytes(_STATUS.dump_json(status))
    temp.replace(path)


def read_status(path: Path) -> PhaseStatus | None:
    try:
        return _STATUS.validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None


def current_progress(spec: WorkloadSpec, now_unix_ns: int | None = None) -> PhaseProgress | None:
    """The running (or last finished) phase and the bytes its ranks have moved."""
    status = read_status(spec.phase_file)
    if status is None:
        return None
    total_bytes = total_ops = 0
    directory = spec.progress_dir(status.repetition, status.phase)
    try:
        files = list(directory.iterdir())
    except OSError:
        files = []
    for path in files:
        record = read_record(path)
        if record is not None:
            total_bytes += record[0]
            total_ops += record[1]
    now = time.time_ns() if now_unix_ns is None else now_unix_ns
    elapsed = max(0.0, (now - status.since_unix_ns) / 1e9)
    return PhaseProgress(status, total_bytes, total_ops, elapsed)
