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

Each round runs every case on the three sides back to back, the mount in
the middle and the other two in alternating order, so that the mount and
each reference meet the same moment of a shared machine. A case is judged
on its paired rounds (``benchfs.bench.paired``): bandwidth by the median of
the per-round ratios mount / native (target >= 0.80x), 4 KiB latency by the
median of the per-round differences of p50, mount - native (target <=
+40 us); against the local disk both are per-round ratios.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchfs.bench.paired import Paired, PairedDifferences, PairedRatios
from benchfs.bench.scope import bench_scope
from benchfs.bench.storage import DEFAULT_ROUNDS
from benchfs.cluster.lifecycle import Lifecycle
from benchfs.daemon.settings import DaemonSettings, write_daemon_config
from benchfs.errors import LaunchError, ToolError
from benchfs.launchers.programs import daemon_argv
from benchfs.mount.cleanup import unmount_all_under
from benchfs.mount.control import mount_in_background, unmount
from benchfs.mount.settings import MountSettings
from benchfs.tools.fio import FioJob, run_fio

MiB = 1 << 20
KiB = 1 << 10
NODES = 4
BW_TARGET = 0.80
LATENCY_TARGET_US = 40.0
DAEMON_GRACE_S = 15.0

Reference = Literal["native", "local disk"]


@dataclass(frozen=True)
class MountBenchSettings:
    jobs: int = 4
    seq_bytes_per_job: int = 128 * MiB
    small_ops: int = 2000
    rounds: int = DEFAULT_ROUNDS
    # The mount's own settings (threads, session spin, ...), checked where they are made.
    mount: MountSettings = field(default_factory=MountSettings)

    def to_dict(self) -> dict[str, Any]:
        """The bench's settings and, beside them, every setting the mount ran with."""
        own = {name: value for name, value in asdict(self).items() if name != "mount"}
        return {**own, **self.mount.model_dump()}


@dataclass(frozen=True)
class PairedRound:
    """One round of a case: the mount's figure and its reference's, back to back."""

    mount: float
    reference: float
    mount_first: bool


@dataclass(frozen=True)
class MountCase:
    """One measurement through the mount beside its reference, round by round."""

    name: str
    reference_name: Reference
    unit: str  # "MiB/s" or "us"
    mount_side: str  # tool, queue depth and caching of the mount's figure
    reference_side: str  # the same of the reference's figure
    rounds: tuple[PairedRound, ...]

    @property
    def higher_is_better(self) -> bool:
        return self.unit == "MiB/s"

    @property
    def mount(self) -> float:
        """The median of the mount's rounds (for orientation; judge by ``paired``)."""
        return statistics.median(r.mount for r in self.rounds)

    @property
    def reference(self) -> float:
        return statistics.median(r.reference for r in self.rounds)

    @property
    def by_difference(self) -> bool:
        """Latency against native is a difference in us; everything else a ratio."""
        return self.reference_name == "native" and not self.higher_is_better

    @property
    def paired(self) -> Paired:
        mount = [r.mount for r in self.rounds]
        reference = [r.reference for r in self.rounds]
        if self.by_difference:
            return PairedDifferences.of(mount, reference)
        return PairedRatios.of(mount, reference)

    @property
    def target(self) -> str | None:
        if self.reference_name != "native":
            return None
        if self.higher_is_better:
            return f">= {BW_TARGET:.2f}x"
        return f"<= +{LATENCY_TARGET_US:g} us"

    def _meets(self, value: float) -> bool:
        if self.higher_is_better:
            return value >= BW_TARGET
        return value <= LATENCY_TARGET_US

    @property
    def met(self) -> bool | None:
        """Whether the median of the paired rounds meets the target."""
        if self.reference_name != "native":
            return None
        return self._meets(self.paired.median)

    @property
    def rounds_met(self) -> int | None:
        """In how many rounds the pair alone meets the target."""
        if self.reference_name != "native":
            return None
        return self.paired.count(self._meets)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "reference_name": self.reference_name,
            "unit": self.unit,
            "mount_side": self.mount_side,
            "reference_side": self.reference_side,
            "mount": round(self.mount, 1),
            "reference": round(self.reference, 1),
            "compared_by": "difference" if self.by_difference else "ratio",
            "paired": self.paired.to_json(),
            "target": self.target,
            "met": self.met,
            "rounds_met": self.rounds_met,
            "rounds": [
                {
                    "first": "mount" if r.mount_first else self.reference_name,
                    "mount": round(r.mount, 1),
                    "reference": round(r.reference, 1),
                }
                for r in self.rounds
            ],
        }


@dataclass
class MountBenchReport:
    settings: MountBenchSettings
    cases: list[MountCase] = field(default_factory=list)
    # 1, 5 and 15 minute load averages when the rounds started and ended.
    load_start: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_end: tuple[float, float, float] = (0.0, 0.0, 0.0)
    # What the mount's log said at unmount: requests served on the session
    # thread and by workers, session spins that found the next request.
    mount_counts: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "settings": self.settings.to_dict(),
            "load_average": {"start": list(self.load_start), "end": list(self.load_end)},
            "mount_counts": self.mount_counts,
            "cases": [c.to_dict() for c in self.cases],
        }


@dataclass(frozen=True)
class _Pattern:
    name: str
    phase: Literal["write", "read"]
    large: bool  # 1 MiB by several jobs (MiB/s), or 4 KiB by one at QD1 (p50 us)


PATTERNS = (
    _Pattern("1 MiB sequential write", "write", large=True),
    _Pattern("1 MiB sequential read", "read", large=True),
    _Pattern("4 KiB sequential write p50, QD1", "write", large=False),
    _Pattern("4 KiB sequential read p50, QD1", "read", large=False),
)

FIO_SEQ = "fio psync direct=1 (O_DIRECT), 4 jobs, QD1 each"
FIO_SMALL = "fio psync direct=1 (O_DIRECT), 1 job, QD1"
NATIVE_SEQ = "run_phase, 4 ranks, 1 transfer in flight each; daemons store O_DIRECT"
NATIVE_SMALL = "run_phase, 1 rank, QD1 (max_in_flight=1); daemons store O_DIRECT"

Side = Literal["native", "mount", "local disk"]


def side_order(round_index: int) -> tuple[Side, Side, Side]:
    """The mount in the middle, so it runs next to both references; which
    reference goes first alternates, so neither always inherits the other's
    after-effects."""
    return ("native", "mount", "local disk") if round_index % 2 == 0 else (
        "local disk", "mount", "native")  # fmt: skip


def run_mount_bench(
    directory: Path | None,
    settings: MountBenchSettings | None = None,
    *,
    on_step: Callable[[str], None] = lambda _: None,
) -> MountBenchReport:
    settings = settings or MountBenchSettings()
    if settings.rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {settings.rounds}")
    report = MountBenchReport(settings)
    figures: dict[tuple[str, Side], list[float]] = {}
    with bench_scope(directory, "benchfs-bench-mount-", grace_s=DAEMON_GRACE_S) as (life, root):
        registry = root / "registry"
        point = root / "mnt"
        point.mkdir()
        local = root / "local"
        local.mkdir()
        # After the processes stop, before the directory goes: a mount its
        # process could not take down must not stay (nor block the removal).
        life.on_exit(lambda: unmount_all_under(root))
        _start_daemons(life, root, registry)
        with _mounted(life, registry, point, settings.mount, root / "mount.log"):
            runners: dict[Side, Callable[[_Pattern, Path], float]] = {
                "native": lambda p, _: _native(registry, p, settings),
                "mount": lambda p, raw: _fio_case(point, p, settings, raw),
                "local disk": lambda p, raw: _fio_case(local, p, settings, raw),
            }
            report.load_start = os.getloadavg()
            for r in range(settings.rounds):
                for k, pattern in enumerate(PATTERNS):
                    for side in side_order(r):
                        on_step(f"round {r + 1}/{settings.rounds}: {pattern.name}: {side}")
                        raw = root / f"fio-{side.replace(' ', '-')}-{r}-{k}.json"
                        value = runners[side](pattern, raw)
                        figures.setdefault((pattern.name, side), []).append(value)
            report.load_end = os.getloadavg()
        report.mount_counts = mount_counts(root / "mount.log")
    report.cases = cases_of(figures, settings.rounds)
    return report


def mount_counts(log: Path) -> list[str]:
    """The mount log's counts at unmount (see ``MountBenchReport``)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []
    return [line for line in lines if "requests served" in line or "session spins" in line]


def cases_of(figures: dict[tuple[str, Side], list[float]], rounds: int) -> list[MountCase]:
    """The cases from every side's figure per round (in round order), with
    which side went first in each round as ``side_order`` ran them."""
    cases = []
    for reference in ("native", "local disk"):
        for pattern in PATTERNS:
            unit, fio_side, native_side = (
                ("MiB/s", FIO_SEQ, NATIVE_SEQ) if pattern.large else ("us", FIO_SMALL, NATIVE_SMALL)
            )
            mount = figures[(pattern.name, "mount")]
            other = figures[(pattern.name, reference)]
            paired = tuple(
                PairedRound(m, o, mount_first=side_order(i).index(reference) > 1)
                for i, (m, o) in enumerate(zip(mount[:rounds], other[:rounds], strict=True))
            )
            reference_side = native_side if reference == "native" else fio_side
            cases.append(MountCase(pattern.name, reference, unit, fio_side, reference_side, paired))
    return cases


def _start_daemons(life: Lifecycle, root: Path, registry: Path) -> None:
    """``NODES`` daemons that ``life`` stops; returns once all are registered."""
    import benchfs_native

    registry.mkdir()
    benchfs_native.ensure_session_key(str(registry))
    processes = []
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
        process = life.start(
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


@contextmanager
def _mounted(
    life: Lifecycle, registry: Path, point: Path, settings: MountSettings, log: Path
) -> Iterator[None]:
    """The mount for the time of the block, unmounted at its end while the
    daemons still serve; ``life`` stops its process should that fail."""
    process = mount_in_background(registry, point, settings, log, start=life.start)
    try:
        yield
    finally:
        unmount(point)
        process.popen.wait(timeout=60)


def _native(registry: Path, pattern: _Pattern, settings: MountBenchSettings) -> float:
    """The native client's figure of one case: MiB/s of ``jobs`` threads, each
    with its own client, or the p50 in us of one client at QD1."""
    import benchfs_native

    names = [f"node{i}" for i in range(NODES)]
    if pattern.large:
        return _parallel_phase(registry, names, pattern.phase, settings)
    with benchfs_native.Client(str(registry), names, name="bench-qd1", max_in_flight=1) as c:
        r = c.run_phase(
            phase=pattern.phase,
            file_name="native-4k",  # sequential, as fio's jobs
            transfer_size=4 * KiB,
            block_size=4 * KiB * settings.small_ops,
        )
        return float(r["p50_ns"]) / 1e3


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


def fio_job(pattern: _Pattern, settings: MountBenchSettings) -> FioJob:
    """fio's job for one case: the same pattern as the native side's."""
    common: dict[str, Any] = {"iodepth": 1, "direct": True, "ioengine": "psync", "unlink": False}
    if pattern.large:
        return FioJob(f"seq-{pattern.phase}", pattern.phase, "1M",
                      size=settings.seq_bytes_per_job, numjobs=settings.jobs,
                      extra={"filename_format": "seq.$jobnum"}, **common)  # fmt: skip
    return FioJob(f"small-{pattern.phase}", pattern.phase, "4k",
                  size=4 * KiB * settings.small_ops,
                  extra={"filename_format": "small.0"}, **common)  # fmt: skip


def _fio_case(directory: Path, pattern: _Pattern, settings: MountBenchSettings, raw: Path) -> float:
    job = fio_job(pattern, settings)
    report = run_fio([job], directory, timeout_s=3600, raw_output=raw)
    figures = report.job(job.name).directions[pattern.phase]
    if pattern.large:
        return figures.bw_mib_s
    clat = figures.clat
    if clat is None or clat.p50_ns is None:
        raise ToolError(f"fio in {directory}: no completion latency percentiles for {job.name}")
    return clat.p50_ns / 1e3
