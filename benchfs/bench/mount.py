"""The FUSE mount against the native client and against the local disk, in
one run on the same four local daemons.

- fio on the mount against the native client's ``run_phase`` with the same
  pattern: 4 jobs (ranks) of 1 MiB sequential writes then reads, one
  transfer outstanding per job on both sides (fio ``psync``, a client window
  of 1), and one job of 4 KiB sequential writes then reads at queue depth 1
  on both sides (``run_phase`` has no random order, so fio does not use one
  either; each 4 KiB transfer is one RPC to one daemon either way);
- fio on the mount against the same fio jobs in a directory on the disk the
  daemons store their data on.

fio runs with ``direct=1`` (``O_DIRECT``: no page cache on the mount or on
the disk); the daemons store with ``O_DIRECT`` (their default), so no side
is answered from a cache. Every case names the tool, queue depth and
caching of each side.

Bandwidth is compared as a ratio (target: mount >= 0.80x native), 4 KiB
latency as the difference of medians (target: mount <= native + 40 us).
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from analysis.loaders.fio import FioReport
from benchfs.cluster.processes import ManagedProcess, start_process, stop_processes
from benchfs.daemon.settings import DaemonSettings, write_daemon_config
from benchfs.errors import LaunchError, ToolError
from benchfs.launchers.programs import daemon_argv
from benchfs.mount import MountSettings, mount_in_background, unmount
from benchfs.tools.fio import FioJob, run_fio

MiB = 1 << 20
KiB = 1 << 10
NODES = 4
BW_TARGET = 0.80
LATENCY_TARGET_US = 40.0


@dataclass(frozen=True)
class MountBenchSettings:
    jobs: int = 4
    seq_bytes_per_job: int = 128 * MiB
    small_ops: int = 2000
    threads: int = 4
    rounds: int = 3


@dataclass(frozen=True)
class MountCase:
    """One measurement through the mount beside its reference."""

    name: str
    mount: float
    reference: float
    reference_name: str  # "native" or "local disk"
    unit: str  # "MiB/s" or "us"
    mount_side: str  # tool, queue depth and caching of the mount's figure
    reference_side: str  # the same of the reference's figure

    @property
    def higher_is_better(self) -> bool:
        return self.unit == "MiB/s"

    @property
    def ratio(self) -> float:
        return self.mount / self.reference if self.reference > 0 else 0.0

    @property
    def target(self) -> str | None:
        if self.reference_name != "native":
            return None
        if self.higher_is_better:
            return f">= {BW_TARGET:.2f}x"
        return f"<= +{LATENCY_TARGET_US:g} us"

    @property
    def met(self) -> bool | None:
        if self.reference_name != "native":
            return None
        if self.higher_is_better:
            return self.ratio >= BW_TARGET
        return self.mount - self.reference <= LATENCY_TARGET_US

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": round(self.ratio, 3), "target": self.target,
                "met": self.met}  # fmt: skip


@dataclass
class MountBenchReport:
    settings: MountBenchSettings
    cases: list[MountCase] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"settings": asdict(self.settings), "cases": [c.to_dict() for c in self.cases]}


def run_mount_bench(
    directory: Path | None,
    settings: MountBenchSettings | None = None,
    *,
    on_step: Callable[[str], None] = lambda _: None,
) -> MountBenchReport:
    settings = settings or MountBenchSettings()
    report = MountBenchReport(settings)
    base = directory if directory is not None else Path(tempfile.gettempdir())
    with tempfile.TemporaryDirectory(prefix="benchfs-bench-mount-", dir=base) as tmp:
        root = Path(tmp)
        registry = root / "registry"
        point = root / "mnt"
        point.mkdir()
        local = root / "local"
        local.mkdir()
        native: list[dict[str, float]] = []
        on_mount: list[dict[str, float]] = []
        on_disk: list[dict[str, float]] = []
        with (
            _daemons(root, registry),
            _mounted(registry, point, settings, root / "mount.log"),
        ):
            # Rounds alternate the three, so a busy moment of a shared
            # machine does not fall on one side only; medians are reported.
            for r in range(settings.rounds):
                on_step(f"round {r + 1}: native client")
                native.append(_native(registry, settings))
                on_step(f"round {r + 1}: fio on the mount")
                on_mount.append(_fio_figures(point, settings, root / f"fio-mount-{r}.json"))
                on_step(f"round {r + 1}: fio on the local disk")
                on_disk.append(_fio_figures(local, settings, root / f"fio-local-{r}.json"))
    report.cases = _cases(_medians(native), _medians(on_mount), _medians(on_disk))
    return report


def _medians(rounds: list[dict[str, float]]) -> dict[str, float]:
    return {name: statistics.median(r[name] for r in rounds) for name in rounds[0]}


SEQ_CASES = ("1 MiB sequential write", "1 MiB sequential read")
SMALL_CASES = ("4 KiB sequential write p50, QD1", "4 KiB sequential read p50, QD1")

FIO_SEQ = "fio psync direct=1 (O_DIRECT), 4 jobs, QD1 each"
FIO_SMALL = "fio psync direct=1 (O_DIRECT), 1 job, QD1"
NATIVE_SEQ = "run_phase, 4 ranks, 1 transfer in flight each; daemons store O_DIRECT"
NATIVE_SMALL = "run_phase, 1 rank, QD1 (max_in_flight=1); daemons store O_DIRECT"


def _cases(
    native: dict[str, float], on_mount: dict[str, float], on_disk: dict[str, float]
) -> list[MountCase]:
    cases = []
    for name in (*SEQ_CASES, *SMALL_CASES):
        unit, fio_side, native_side = (
            ("MiB/s", FIO_SEQ, NATIVE_SEQ) if name in SEQ_CASES else ("us", FIO_SMALL, NATIVE_SMALL)
        )
        cases.append(
            MountCase(name, on_mount[name], native[name], "native", unit, fio_side, native_side)
        )
    for name, value in on_mount.items():
        unit, fio_side = ("MiB/s", FIO_SEQ) if name in SEQ_CASES else ("us", FIO_SMALL)
        cases.append(MountCase(name, value, on_disk[name], "local disk", unit, fio_side, fio_side))
    return cases


@contextmanager
def _daemons(root: Path, registry: Path) -> Iterator[list[ManagedProcess]]:
    import benchfs_native

    registry.mkdir()
    benchfs_native.ensure_session_key(str(registry))
    processes = []
    try:
        for i in range(NODES):
            config = write_daemon_config(
                root / f"node{i}.toml",
                DaemonSettings(
                    node_name=f"node{i}",
                    node_id=i,
                    data_dir=str(root / "data" / f"node{i}"),
                    registry_dir=str(registry),
                ),
            )
            process = start_process(
                daemon_argv(config),
                name=f"daemon node{i}",
                stdout=root / f"node{i}.log",
                stderr=root / f"node{i}.err",
            )
            processes.append(process)
        deadline = time.monotonic() + 60
        while len(benchfs_native.read_registry(str(registry))) < NODES:
            for p in processes:
                if p.returncode is not None:
                    raise LaunchError(f"{p.describe()} exited before registering")
            if time.monotonic() > deadline:
                raise LaunchError("the benchmark daemons did not register within 60 s")
            time.sleep(0.05)
        yield processes
    finally:
        stop_processes(processes, grace_s=15)


@contextmanager
def _mounted(
    registry: Path, point: Path, settings: MountBenchSettings, log: Path
) -> Iterator[None]:
    process = mount_in_background(registry, point, MountSettings(threads=settings.threads), log)
    try:
        yield
    finally:
        unmount(point)
        process.popen.wait(timeout=60)


def _native(registry: Path, settings: MountBenchSettings) -> dict[str, float]:
    """The native client's figures: ``jobs`` threads, each with its own client."""
    import benchfs_native

    names = [f"node{i}" for i in range(NODES)]
    out = {
        f"1 MiB sequential {phase}": _parallel_phase(registry, names, phase, settings)
        for phase in ("write", "read")
    }
    with benchfs_native.Client(str(registry), names, name="bench-qd1", max_in_flight=1) as c:
        for phase in ("write", "read"):
            r = c.run_phase(
                phase=phase,
                file_name="native-4k",  # sequential, as fio's jobs
                transfer_size=4 * KiB,
                block_size=4 * KiB * settings.small_ops,
            )
            out[f"4 KiB sequential {phase} p50, QD1"] = r["p50_ns"] / 1e3
    return out


def _parallel_phase(
    registry: Path, names: list[str], phase: str, settings: MountBenchSettings
) -> float:
    """MiB/s of ``jobs`` ranks of 1 MiB transfers, from the first start to the last end."""
    import benchfs_native

    results: list[dict[str, Any]] = [{} for _ in range(settings.jobs)]
    errors: list[BaseException] = []

    def rank(i: int) -> None:
        try:
            with benchfs_native.Client(
                str(registry), names, name=f"bench-{i}", max_in_flight=1
            ) as client:
                results[i] = dict(
                    client.run_phase(
                        phase="write" if phase == "write" else "read",
                        file_name="native-seq",
                        transfer_size=MiB,
                        block_size=settings.seq_bytes_per_job,
                        rank=i,
                        ranks=settings.jobs,
                    )
                )
        except BaseException as error:  # raised again on the calling thread
            errors.append(error)

    threads = [threading.Thread(target=rank, args=(i,)) for i in range(settings.jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    start = min(r["start_unix_ns"] for r in results)
    end = max(r["end_unix_ns"] for r in results)
    total: int = sum(r["bytes"] for r in results)
    return float(total / MiB / max((end - start) / 1e9, 1e-9))


def _fio_jobs(settings: MountBenchSettings) -> list[FioJob]:
    seq = {"filename_format": "seq.$jobnum"}
    small = {"filename_format": "small.0"}
    common: dict[str, Any] = {"iodepth": 1, "direct": True, "ioengine": "psync", "unlink": False}
    return [
        FioJob("seq-write", "write", "1M", size=settings.seq_bytes_per_job,
               numjobs=settings.jobs, extra=seq, **common),
        FioJob("seq-read", "read", "1M", size=settings.seq_bytes_per_job,
               numjobs=settings.jobs, extra=seq, **common),
        FioJob("small-write", "write", "4k", size=4 * KiB * settings.small_ops,
               extra=small, **common),
        FioJob("small-read", "read", "4k", size=4 * KiB * settings.small_ops,
               extra=small, **common),
    ]  # fmt: skip


def _fio_figures(directory: Path, settings: MountBenchSettings, raw: Path) -> dict[str, float]:
    report: FioReport = run_fio(_fio_jobs(settings), directory, timeout_s=3600, raw_output=raw)
    out = {
        SEQ_CASES[0]: report.job("seq-write").write.bw_mib_s,
        SEQ_CASES[1]: report.job("seq-read").read.bw_mib_s,
    }
    for job, direction, name in (
        ("small-write", "write", SMALL_CASES[0]),
        ("small-read", "read", SMALL_CASES[1]),
    ):
        clat = report.job(job).directions[direction].clat
        if clat is None or clat.p50_ns is None:
            raise ToolError(f"fio in {directory}: no completion latency percentiles for {job}")
        out[name] = clat.p50_ns / 1e3
    return out
