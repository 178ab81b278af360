"""The diagnose test plan: what runs, in which order, with which fio options.

Each test runs for a fixed time (``time_based``), so a slow disk makes a test
report low figures rather than run long. All fio tests but the fsync one
share one file: the first test writes it (O_DIRECT, for a fixed time), and
the later ones use only as much of it as was written (see ``fit_to_file``).
Reading needs data that was written first; on a disk that writes at 8 MiB/s,
laying out a fixed size would take minutes, so the size follows the disk.
The buffered write ends with an fsync so that its dirty pages are paid for in
that test and not in the next one. ``--quick`` keeps the same tests with
shorter runs and a smaller file, to finish well within 30 s per node.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from benchfs.tools.fio import FioJob

SHARED_FILE = "benchfs-diagnose.dat"
MIB = 1024 * 1024


@dataclass(frozen=True)
class PlanStep:
    name: str
    title: str
    what: str  # one sentence for the report
    job: FioJob | None = None  # None: the metadata test, done in Python
    metadata_files: int = 0
    fits_written_file: bool = False  # use only what the earlier steps wrote of SHARED_FILE


@dataclass(frozen=True)
class Plan:
    steps: tuple[PlanStep, ...]
    runtime_s: float
    space_bytes: int  # free space the plan needs in the directory

    def step(self, name: str) -> PlanStep:
        return next(step for step in self.steps if step.name == name)


def fit_to_file(job: FioJob, file_bytes: int) -> FioJob:
    """``job`` limited to the first ``file_bytes`` of its file (whole MiB), if that is less."""
    usable = file_bytes // MIB * MIB
    if usable < MIB:
        return job
    size = job.size if isinstance(job.size, int) else None
    if size is not None and size <= usable:
        return job
    return dataclasses.replace(job, size=usable)


def diagnose_plan(quick: bool) -> Plan:
    runtime = 2.0 if quick else 10.0
    file_mib = 256 if quick else 1024
    rand_jobs = 4
    files = 500 if quick else 2000
    size = file_mib * MIB

    def on_file(
        name: str,
        rw: str,
        bs: str,
        direct: bool,
        *,
        rwmixread: int | None = None,
        numjobs: int = 1,
        extra: dict[str, str] | None = None,
    ) -> FioJob:
        return FioJob(
            name=name,
            rw=rw,
            bs=bs,
            iodepth=8 if direct else 1,
            size=size,
            numjobs=numjobs,
            direct=direct,
            ioengine="io_uring" if direct else "psync",
            runtime_s=runtime,
            rwmixread=rwmixread,
            unlink=False,
            # No preallocation: the file's length is then what was really written.
            extra={"filename": SHARED_FILE, "fallocate": "none", **(extra or {})},
        )

    steps = (
        PlanStep(
            "seq_write_direct",
            "Sequential write, 1 MiB, O_DIRECT",
            "Large writes that bypass the page cache: the device's write bandwidth.",
            on_file("seq_write_direct", "write", "1M", True),
        ),
        PlanStep(
            "seq_read_direct",
            "Sequential read, 1 MiB, O_DIRECT",
            "Large reads that bypass the page cache: the device's read bandwidth.",
            on_file("seq_read_direct", "read", "1M", True),
            fits_written_file=True,
        ),
        PlanStep(
            "rand_rw",
            f"Random 70/30 read/write, 4 KiB, QD8 x {rand_jobs} jobs",
            "Small random I/O as databases and metadata-heavy codes do: IOPS and tail latency.",
            on_file("rand_rw", "randrw", "4k", True, rwmixread=70, numjobs=rand_jobs),
            fits_written_file=True,
        ),
        PlanStep(
            "seq_write_buffered",
            "Sequential write, 1 MiB, buffered",
            "Large writes into the page cache; fsync at the end (not in the figure) so that "
            "the next test does not pay for this one's dirty pages.",
            on_file("seq_write_buffered", "write", "1M", False, extra={"end_fsync": "1"}),
            fits_written_file=True,
        ),
        PlanStep(
            "seq_read_buffered",
            "Sequential read, 1 MiB, buffered",
            "Large reads through the page cache, the file's cached pages dropped first.",
            dataclasses.replace(on_file("seq_read_buffered", "read", "1M", False), unlink=True),
            fits_written_file=True,
        ),
        PlanStep(
            "fsync_write",
            "Small writes with fsync after each, 4 KiB, QD1",
            "Durable small writes (journals, checkpoint metadata): IOPS and fsync latency.",
            FioJob(
                name="fsync_write",
                rw="write",
                bs="4k",
                iodepth=1,
                size="16M",
                direct=False,
                ioengine="psync",
                fsync=1,
                runtime_s=runtime,
            ),
        ),
        PlanStep(
            "metadata",
            f"Metadata: create, stat, delete {files} files",
            "File creation, lookup and removal rates of the file system, per operation.",
            metadata_files=files,
        ),
    )
    return Plan(steps=steps, runtime_s=runtime, space_bytes=size + 16 * MIB)
