"""The engine's chunk store against fio on the same directory, in one run.

Each case runs the engine's native bulk loop and fio (io_uring, O_DIRECT)
with the same pattern, block size, queue depth and byte count, in pairs of
rounds on the same file system, and reports per round the ratio engine /
fio, their median and spread. Paired ratios are what to compare: absolute
figures drift with the machine and with the host's cache behind the disk.
Each side also says how its I/O reached the disk: the requests the disk
completed meanwhile and their mean size (benchfs.tools.disk_stat), since
the same calls can reach it split or merged.
"""

from __future__ import annotations

import shutil
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar

from benchfs.bench.paired import PairedRatios
from benchfs.bench.scope import bench_scope
from benchfs.errors import ToolError
from benchfs.tools.disk_stat import DiskCounts, read_disk_counts
from benchfs.tools.fio import FioJob, run_fio
from benchfs.tools.fsinfo import inspect_directory
from benchfs.tools.huge_pages import require_huge_pages

Pattern = Literal["write", "read", "randwrite", "randread"]
MiB = 1024 * 1024
T = TypeVar("T")
# Enough pairs that the median of their ratios is steadier than one round
# (the spread shows how much), in a few minutes at the default sizes.
DEFAULT_ROUNDS = 7
DEFAULT_TRACE_REPEATS = 5


@dataclass(frozen=True)
class StorageCase:
    name: str
    pattern: Pattern
    block_size: int
    queue_depth: int
    total_bytes: int


@dataclass(frozen=True)
class Side:
    """One tool's figures for one case."""

    MiBps: float
    iops: float
    p50_us: float
    p99_us: float
    # Requests the disk completed in the case's direction while the side ran,
    # and their mean size (None off a single block device).
    disk_requests: int | None = None
    disk_request_KiB: float | None = None


@dataclass(frozen=True)
class Setup:
    """How one side ran: the tool and what decides its speed."""

    tool: str
    ioengine: str
    queue_depth: int
    direct: bool

    def describe(self) -> str:
        caching = "O_DIRECT" if self.direct else "page cache"
        return f"{self.tool}: {self.ioengine}, QD {self.queue_depth}, {caching}"


@dataclass(frozen=True)
class Round:
    """One pair: the engine's and fio's run of a case, back to back."""

    engine: Side
    fio: Side
    engine_io_depth_mean: float
    engine_first: bool

    @property
    def ratio(self) -> float:
        return self.engine.MiBps / self.fio.MiBps if self.fio.MiBps > 0 else 0.0


@dataclass(frozen=True)
class CaseResult:
    name: str
    rounds: list[Round]
    engine_setup: Setup
    fio_setup: Setup

    @property
    def paired(self) -> PairedRatios:
        return PairedRatios.of(
            [r.engine.MiBps for r in self.rounds], [r.fio.MiBps for r in self.rounds]
        )

    @property
    def ratio(self) -> float:
        """The median of the per-round ratios engine / fio."""
        return self.paired.median

    @property
    def engine(self) -> Side:
        """The engine's median round (by throughput), with its own latencies."""
        return _median_run([r.engine for r in self.rounds], key=lambda side: side.MiBps)

    @property
    def fio(self) -> Side:
        return _median_run([r.fio for r in self.rounds], key=lambda side: side.MiBps)

    @property
    def io_depth_mean(self) -> float:
        return statistics.median(r.engine_io_depth_mean for r in self.rounds)


@dataclass
class StorageBenchReport:
    directory: str
    disk: str | None = None  # the one whole disk under the directory, if one
    cases: list[CaseResult] = field(default_factory=list)
    trace_overhead: PairedRatios | None = None

    @property
    def trace_overhead_ratio(self) -> float | None:
        """Median of the paired on/off throughput ratios."""
        return None if self.trace_overhead is None else self.trace_overhead.median

    def to_json(self) -> dict[str, Any]:
        overhead = self.trace_overhead
        return {
            "directory": self.directory,
            "disk": self.disk,
            "cases": [_case_json(case) for case in self.cases],
            "trace_overhead_ratio": None if overhead is None else round(overhead.median, 3),
            "trace_overhead": None if overhead is None else overhead.to_json(),
        }


def _case_json(case: CaseResult) -> dict[str, Any]:
    return {
        "name": case.name,
        "engine_MiBps": round(case.engine.MiBps, 1),
        "fio_MiBps": round(case.fio.MiBps, 1),
        "ratio": round(case.ratio, 3),
        "paired_ratio": case.paired.to_json(),
        "engine": asdict(case.engine),
        "fio": asdict(case.fio),
        "engine_setup": asdict(case.engine_setup),
        "fio_setup": asdict(case.fio_setup),
        "engine_io_depth_mean": round(case.io_depth_mean, 2),
        "rounds": [
            {
                "first": "engine" if r.engine_first else "fio",
                "engine": asdict(r.engine),
                "fio": asdict(r.fio),
                "ratio": round(r.ratio, 3),
                "engine_io_depth_mean": round(r.engine_io_depth_mean, 2),
            }
            for r in case.rounds
        ],
    }


def standard_cases(seq_bytes: int, rand_bytes: int, queue_depth: int = 32) -> list[StorageCase]:
    """The four cases: sequential 1 MiB and random 4 KiB, write then read."""
    return [
        StorageCase("seq_write_1MiB", "write", MiB, queue_depth, seq_bytes),
        StorageCase("seq_read_1MiB", "read", MiB, queue_depth, seq_bytes),
        StorageCase("rand_write_4KiB", "randwrite", 4096, queue_depth, rand_bytes),
        StorageCase("rand_read_4KiB", "randread", 4096, queue_depth, rand_bytes),
    ]


def _engine_side(result: dict[str, Any]) -> Side:
    latency = result["latency"]
    return Side(
        MiBps=float(result["MiBps"]),
        iops=float(result["iops"]),
        p50_us=latency["p50_ns"] / 1000,
        p99_us=latency["p99_ns"] / 1000,
    )


@dataclass(frozen=True)
class _EngineRun:
    side: Side
    io_depth_mean: float
    setup: Setup


def _disk_of(directory: Path) -> str | None:
    """The one whole disk under ``directory``; None for memory, network or several disks."""
    try:
        disks = inspect_directory(directory).disks
    except ToolError:
        return None
    return disks[0] if len(disks) == 1 else None


def _disk_span(disk: str | None, run: Callable[[], T]) -> tuple[T, DiskCounts | None]:
    """``run()``, and what ``disk`` completed meanwhile (None without a disk)."""
    before = read_disk_counts(disk) if disk else None
    result = run()
    after = read_disk_counts(disk) if disk else None
    return result, None if before is None or after is None else after - before


def _as_seen_by_disk(side: Side, span: DiskCounts | None, case: StorageCase) -> Side:
    if span is None:
        return side
    writing = "write" in case.pattern
    return replace(
        side,
        disk_requests=span.requests(writing),
        disk_request_KiB=span.mean_request_KiB(writing),
    )


def _run_engine(root: Path, case: StorageCase, trace_dir: Path | None = None) -> _EngineRun:
    import benchfs_native

    result = benchfs_native.bench_storage(
        str(root),
        pattern=case.pattern,
        block_size=case.block_size,
        queue_depth=case.queue_depth,
        total_bytes=case.total_bytes,
        files=1,
        direct=True,
        trace_dir=None if trace_dir is None else str(trace_dir),
    )
    setup = Setup(
        tool="engine",
        ioengine=f"io_uring {result['ring_setup']}, fixed buffers",
        queue_depth=result["queue_depth"],
        direct=result["direct"],
    )
    return _EngineRun(_engine_side(dict(result)), result["io_depth_mean"], setup)


def _fio_job(case: StorageCase, huge_pages: bool) -> FioJob:
    return FioJob(
        name=case.name,
        rw=case.pattern,
        bs=case.block_size,
        iodepth=case.queue_depth,
        size=case.total_bytes,
        direct=True,
        ioengine="io_uring",
        unlink=False,  # the read cases read what the write cases laid out
        huge_pages=huge_pages,
        extra={"filename": "fio.data"},
    )


def _run_fio(root: Path, case: StorageCase, huge_pages: bool) -> tuple[Side, Setup]:
    job = _fio_job(case, huge_pages)
    report = run_fio([job], root, timeout_s=600)
    result = report.jobs[0]
    figures = result.read if "read" in case.pattern else result.write
    clat = figures.clat
    side = Side(
        MiBps=figures.bw_mib_s,
        iops=figures.iops,
        p50_us=(clat.p50_ns or 0.0) / 1000 if clat else 0.0,
        p99_us=(clat.p99_ns or 0.0) / 1000 if clat else 0.0,
    )
    setup = Setup(
        tool=report.fio_version or "fio",
        ioengine=f"ioengine={job.ioengine}, buffers on {job.memory}",
        queue_depth=job.iodepth,
        direct=job.direct,
    )
    return side, setup


def run_storage_bench(
    directory: Path | None,
    cases: list[StorageCase],
    *,
    rounds: int = DEFAULT_ROUNDS,
    trace_repeats: int = DEFAULT_TRACE_REPEATS,
    fio_huge_pages: bool = False,
    on_progress: Callable[[str], None] = lambda _: None,
) -> StorageBenchReport:
    """Run every case on the engine and on fio in ``rounds`` pairs, then the
    trace on/off comparison.

    Each round runs the engine and fio back to back, so that both meet the
    same state of the machine and of the host's cache; which goes first
    alternates from round to round, so that neither always inherits the
    other's after-effects (dirty pages, a warm host cache).
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if fio_huge_pages:  # before any side runs, not at the first fio
        require_huge_pages([max(_fio_job(case, True).buffer_bytes for case in cases)])
    with bench_scope(directory, "benchfs-bench-") as (_, root):
        engine_dir, fio_dir = root / "engine", root / "fio"
        engine_dir.mkdir()
        fio_dir.mkdir()
        report = StorageBenchReport(directory=str(root.parent))
        report.disk = _disk_of(root)
        for case in cases:
            pairs: list[Round] = []
            for index in range(rounds):
                engine_first = index % 2 == 0
                label = f"{case.name}, round {index + 1}/{rounds}"
                on_progress(f"{label}: {'engine' if engine_first else 'fio'}")
                if engine_first:
                    engine_run, engine_span = _disk_span(
                        report.disk, partial(_run_engine, engine_dir, case)
                    )
                    on_progress(f"{label}: fio")
                    (fio_side, fio_setup), fio_span = _disk_span(
                        report.disk, partial(_run_fio, fio_dir, case, fio_huge_pages)
                    )
                else:
                    (fio_side, fio_setup), fio_span = _disk_span(
                        report.disk, partial(_run_fio, fio_dir, case, fio_huge_pages)
                    )
                    on_progress(f"{label}: engine")
                    engine_run, engine_span = _disk_span(
                        report.disk, partial(_run_engine, engine_dir, case)
                    )
                pairs.append(
                    Round(
                        _as_seen_by_disk(engine_run.side, engine_span, case),
                        _as_seen_by_disk(fio_side, fio_span, case),
                        engine_run.io_depth_mean,
                        engine_first,
                    )
                )
            report.cases.append(CaseResult(case.name, pairs, engine_run.setup, fio_setup))
        if trace_repeats > 0:
            report.trace_overhead = _trace_overhead(
                engine_dir, root / "traces", cases, trace_repeats, on_progress
            )
        return report


def _median_run(runs: list[T], key: Callable[[T], float]) -> T:
    """The run whose throughput is the (lower) median, with its own latencies."""
    return sorted(runs, key=key)[(len(runs) - 1) // 2]


def _trace_overhead(
    engine_dir: Path,
    trace_dir: Path,
    cases: list[StorageCase],
    repeats: int,
    on_progress: Callable[[str], None],
) -> PairedRatios | None:
    """Throughput with the event log on over off, per pair, on the most op-heavy case.

    Which of the two goes first alternates from pair to pair.
    """
    random_reads = [case for case in cases if case.pattern == "randread"]
    if not random_reads:
        return None
    case = random_reads[0]
    on: list[float] = []
    off: list[float] = []
    for repeat in range(repeats):
        on_progress(f"trace overhead: {case.name} {repeat + 1}/{repeats}")
        for traced in (False, True) if repeat % 2 == 0 else (True, False):
            if traced:
                trace_dir.mkdir(exist_ok=True)
                on.append(_run_engine(engine_dir, case, trace_dir).side.MiBps)
                shutil.rmtree(trace_dir, ignore_errors=True)
            else:
                off.append(_run_engine(engine_dir, case).side.MiBps)
    return PairedRatios.of(on, off)
