"""The engine's chunk store against fio on the same directory, in one run.

Each case runs the engine's native bulk loop and fio (io_uring, O_DIRECT)
with the same pattern, block size, queue depth and byte count, one after the
other on the same file system, and reports the ratio engine / fio. Ratios
from one run are what to compare: absolute figures drift with the machine.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from benchfs.errors import ToolError
from benchfs.tools.fio import FioJob, run_fio

Pattern = Literal["write", "read", "randwrite", "randread"]
MiB = 1024 * 1024
T = TypeVar("T")


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


@dataclass(frozen=True)
class CaseResult:
    name: str
    engine: Side
    fio: Side
    io_depth_mean: float

    @property
    def ratio(self) -> float:
        return self.engine.MiBps / self.fio.MiBps if self.fio.MiBps > 0 else 0.0


@dataclass
class StorageBenchReport:
    directory: str
    cases: list[CaseResult] = field(default_factory=list)
    trace_overhead_ratio: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": self.directory,
            "cases": [
                {
                    "name": case.name,
                    "engine_MiBps": round(case.engine.MiBps, 1),
                    "fio_MiBps": round(case.fio.MiBps, 1),
                    "ratio": round(case.ratio, 3),
                    "engine": asdict(case.engine),
                    "fio": asdict(case.fio),
                    "engine_io_depth_mean": round(case.io_depth_mean, 2),
                }
                for case in self.cases
            ],
            "trace_overhead_ratio": (
                None if self.trace_overhead_ratio is None else round(self.trace_overhead_ratio, 3)
            ),
        }


def standard_cases(seq_bytes: int, rand_bytes: int, queue_depth: int = 32) -> list[StorageCase]:
    """The four cases: sequential 1 MiB and random 4 KiB, write then read."""
    return [
        StorageCase("seq_write_1MiB", "write", MiB, queue_depth, seq_bytes),
        StorageCase("seq_read_1MiB", "read", MiB, queue_depth, seq_bytes),
        StorageCase("rand_write_4KiB", "randwrite", 4096, queue_depth, rand_bytes),
        StorageCase("rand_read_4KiB", "randread", 4096, queue_depth, rand_bytes),
    ]


@contextmanager
def bench_directory(directory: Path | None) -> Iterator[Path]:
    """A fresh directory under ``directory`` (or the system temp dir), removed afterwards."""
    if directory is not None and not directory.is_dir():
        raise ToolError(f"benchmark directory {directory} does not exist")
    path = Path(tempfile.mkdtemp(prefix="benchfs-bench-", dir=directory))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _engine_side(result: dict[str, Any]) -> Side:
    latency = result["latency"]
    return Side(
        MiBps=float(result["MiBps"]),
        iops=float(result["iops"]),
        p50_us=latency["p50_ns"] / 1000,
        p99_us=latency["p99_ns"] / 1000,
    )


def _run_engine(root: Path, case: StorageCase, trace_dir: Path | None = None) -> tuple[Side, float]:
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
    return _engine_side(dict(result)), float(result["io_depth_mean"])


def _run_fio(root: Path, case: StorageCase) -> Side:
    job = FioJob(
        name=case.name,
        rw=case.pattern,
        bs=case.block_size,
        iodepth=case.queue_depth,
        size=case.total_bytes,
        direct=True,
        ioengine="io_uring",
        unlink=False,  # the read cases read what the write cases laid out
        extra={"filename": "fio.data"},
    )
    result = run_fio([job], root, timeout_s=600).jobs[0]
    figures = result.read if "read" in case.pattern else result.write
    clat = figures.clat
    return Side(
        MiBps=figures.bw_mib_s,
        iops=figures.iops,
        p50_us=(clat.p50_ns or 0.0) / 1000 if clat else 0.0,
        p99_us=(clat.p99_ns or 0.0) / 1000 if clat else 0.0,
    )


def run_storage_bench(
    directory: Path | None,
    cases: list[StorageCase],
    *,
    rounds: int = 3,
    trace_repeats: int = 3,
    on_progress: Callable[[str], None] = lambda _: None,
) -> StorageBenchReport:
    """Run every case on the engine and on fio, then the trace on/off comparison.

    Engine and fio alternate ``rounds`` times per case so that drift of the
    machine hits both alike; each side reports its median round.
    """
    with bench_directory(directory) as root:
        engine_dir, fio_dir = root / "engine", root / "fio"
        engine_dir.mkdir()
        fio_dir.mkdir()
        report = StorageBenchReport(directory=str(root.parent))
        for case in cases:
            engine_runs: list[tuple[Side, float]] = []
            fio_runs: list[Side] = []
            for round_ in range(1, rounds + 1):
                on_progress(f"{case.name}: engine, round {round_}/{rounds}")
                engine_runs.append(_run_engine(engine_dir, case))
                on_progress(f"{case.name}: fio, round {round_}/{rounds}")
                fio_runs.append(_run_fio(fio_dir, case))
            engine, depth = _median_run(engine_runs, key=lambda run: run[0].MiBps)
            fio = _median_run(fio_runs, key=lambda side: side.MiBps)
            report.cases.append(CaseResult(case.name, engine, fio, depth))
        if trace_repeats > 0:
            report.trace_overhead_ratio = _trace_overhead(
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
) -> float | None:
    """Throughput with the event log on divided by off, on the most op-heavy case.

    On and off runs alternate so that drift of the machine hits both alike;
    the ratio is of the medians.
    """
    random_reads = [case for case in cases if case.pattern == "randread"]
    if not random_reads:
        return None
    case = random_reads[0]
    on: list[float] = []
    off: list[float] = []
    for repeat in range(repeats):
        on_progress(f"trace overhead: {case.name} {repeat + 1}/{repeats}")
        off.append(_run_engine(engine_dir, case)[0].MiBps)
        trace_dir.mkdir(exist_ok=True)
        on.append(_run_engine(engine_dir, case, trace_dir)[0].MiBps)
        shutil.rmtree(trace_dir, ignore_errors=True)
    return statistics.median(on) / statistics.median(off)
