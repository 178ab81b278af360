"""The engine's RPC layer against references doing the same work, in one run.

For each transport (UCX's own choice, which is shared memory on one host,
and tcp) one daemon runs as its own process and this process is the
client. Each round runs the engine and its references side by side, in
turns (the engine first in even rounds, last in odd ones):

- 4 KiB round trip: echoed pings, one outstanding, against
  ``ucx_perftest -t ucp_am_lat`` (its half round trip doubled) and the
  binding's ``am_pingpong --recv-copy``. Plain ``ucp_am_lat`` never reads
  the payload it receives; an RPC must deliver it. ``--recv-copy`` copies
  each received 4 KiB out on both sides, and so does ``ucp_am_lat -y``
  where the perftest has it (UCX 1.15 and later; ``--perftest`` may name
  such a build): those are the like-for-like references.
- 1 MiB bandwidth: one-way pings, a window of 16, against
  ``ucx_perftest -t ucp_am_bw`` and ``am_pingpong``'s bulk window. 1 MiB
  goes by rendezvous in all of them: the receiver fetches every message
  into a buffer (perftest's handler receives rendezvous data; only eager
  messages it leaves unread), so every reference delivers the data.
  ``am_pingpong --recv-buffers 16 --huge-source`` is the like-for-like
  reference: as the daemon does, it receives each message in flight into
  a buffer of its own, and as the engine's client does, it sends from
  transparent huge pages (the receiver pins the sender's pages for each
  fetch, so what the data is sent from weighs in). perftest receives
  every message into one buffer, which stays in the cache, and sends from
  SysV shared memory (UCX's default); ``UCX_ALLOC_PRIO=mmap,heap`` gives
  it a private mapping that ``ucp_am_bw`` never writes, so every page it
  sends reads as the kernel's zero page, one physical page that stays in
  the cache: a ceiling, not a like-for-like figure. Each reference's
  ``differs`` says so.

Each case's turn is bracketed by ``core_to_core`` (a cache line passed
between CPUs 0 and 1; benchfs.bench.placement): a round whose placement
changed is reported but not counted. Comparisons are the per-round ratios
(benchfs.bench.paired), met or missed on their median. Then 4 KiB writes
and reads through the daemon (buffered storage), one at a time; the
daemon's start-to-registered time and its peak RSS under this load are
reported beside the buffer pool it was given.
"""

from __future__ import annotations

import functools
import os
import re
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchfs.bench.paired import PairedRatios
from benchfs.bench.placement import Placement
from benchfs.bench.scope import bench_scope
from benchfs.cluster.lifecycle import Lifecycle
from benchfs.cluster.processes import ManagedProcess
from benchfs.daemon.settings import DaemonSettings, write_daemon_config
from benchfs.errors import LaunchError
from benchfs.launchers.programs import daemon_argv
from benchfs.tools.ucx_examples import Examples, core_to_core_ns, find_examples, run_am_pingpong
from benchfs.tools.ucx_perftest import PERFTEST, Perftest, probe_perftest, run_perftest

# The transports compared: UCX's own choice (shared memory on one host) and tcp.
MeasuredTransport = Literal["auto", "tcp"]
MiB = 1024 * 1024
DAEMON_GRACE_S = 15.0
_REGISTERED = re.compile(r"registered in (\d+(?:\.\d+)?) ms")
# The targets: RPC 4 KiB round trip <= 1.5x the reference's, 1 MiB bandwidth >= 0.95x.
RTT_TARGET = 1.5
BW_TARGET = 0.95


@dataclass(frozen=True)
class Reference:
    """A program the engine is compared with, and whether it does the RPC's work."""

    key: str
    what: str
    reads_payload: bool
    # What keeps it from doing the engine's work the engine's way ("": nothing).
    differs: str = ""

    @property
    def like_for_like(self) -> bool:
        return not self.differs

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "like_for_like": self.like_for_like}


PERFTEST_LAT = Reference(
    "ucx_perftest",
    "ucx_perftest -t ucp_am_lat, half round trip doubled (the payload is never read)",
    reads_payload=False,
    differs="no read",
)
PERFTEST_LAT_COPY = Reference(
    "ucx_perftest_copy",
    "ucx_perftest -t ucp_am_lat -y, half round trip doubled (each received 4 KiB copied out)",
    reads_payload=True,
)
PINGPONG_COPY = Reference(
    "am_pingpong_recv_copy",
    "the binding's am_pingpong --recv-copy (both sides copy each received 4 KiB out)",
    reads_payload=True,
)
PERFTEST_BW = Reference(
    "ucx_perftest",
    "ucx_perftest -t ucp_am_bw, window 16, UCX's default allocation (rendezvous: every 1 MiB "
    "fetched into its one receive buffer, which stays in the cache; sent from SysV shared "
    "memory)",
    reads_payload=True,
    differs="SysV shared memory; one receive buffer",
)
PERFTEST_BW_PRIVATE = Reference(
    "ucx_perftest_private",
    "ucx_perftest -t ucp_am_bw, window 16, UCX_ALLOC_PRIO=mmap,heap (rendezvous: every 1 MiB "
    "fetched into its one receive buffer; sent from a private mapping it never writes, so "
    "every page read is the kernel's zero page)",
    reads_payload=True,
    differs="never-written source: the zero page; one receive buffer",
)
PINGPONG_BW = Reference(
    "am_pingpong",
    "the binding's am_pingpong bulk window of 16 (each message in flight received into a "
    "pooled buffer of its own, 16 in all; sent from one buffer on transparent huge pages, "
    "as the engine's client sends)",
    reads_payload=True,
)
# perftest's buffers in private memory, as the engine's are (but never written).
PRIVATE_ALLOC = {"UCX_ALLOC_PRIO": "mmap,heap"}


@dataclass(frozen=True)
class CaseRound:
    """One round of one case: the engine and each reference, and the placement around them."""

    engine_first: bool
    placement: Placement
    engine: float
    references: Mapping[str, float]

    def to_dict(self, number: int) -> dict[str, Any]:
        return {
            "round": number,
            "order": "engine first" if self.engine_first else "references first",
            **self.placement.to_json(),
            "engine": self.engine,
            **self.references,
        }


@dataclass(frozen=True)
class RpcCase:
    name: str
    unit: str
    higher_is_better: bool
    target: float  # engine / reference must be <= target (lower is better) or >= target
    references: tuple[Reference, ...]
    rounds: tuple[CaseRound, ...]

    @property
    def counted(self) -> tuple[CaseRound, ...]:
        """The rounds whose placement held."""
        return tuple(r for r in self.rounds if r.placement.steady)

    def ratios(self, reference: str) -> PairedRatios:
        """engine / reference, round by round, over the counted rounds."""
        counted = self.counted
        return PairedRatios.of(
            [r.engine for r in counted], [r.references[reference] for r in counted]
        )

    def met(self, reference: str) -> bool | None:
        """The target against ``reference`` on the median ratio; None without a counted round."""
        ratios = self.ratios(reference)
        if ratios.rounds == 0:
            return None
        median = ratios.median
        return median >= self.target if self.higher_is_better else median <= self.target

    def engine_median(self) -> float:
        return _median([r.engine for r in self.counted])

    def reference_median(self, reference: str) -> float:
        return _median([r.references[reference] for r in self.counted])

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "target": self.target,
            "rounds_counted": len(self.counted),
            "engine_median": self.engine_median(),
            "comparisons": [
                {
                    **ref.to_dict(),
                    "reference_median": self.reference_median(ref.key),
                    "ratio": self.ratios(ref.key).to_json(),
                    "met": self.met(ref.key),
                }
                for ref in self.references
            ],
            "rounds": [r.to_dict(i + 1) for i, r in enumerate(self.rounds)],
        }


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


@dataclass
class DaemonFigures:
    registered_after_ms: float
    peak_rss_MiB: float
    buffer_pool_MiB: float

    @property
    def rss_over_pool_MiB(self) -> float:
        return self.peak_rss_MiB - self.buffer_pool_MiB


@dataclass
class RpcBenchReport:
    transport: str
    rounds: int
    cases: list[RpcCase] = field(default_factory=list)
    e2e: dict[str, float] = field(default_factory=dict)
    daemon: DaemonFigures | None = None
    load_start: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_end: tuple[float, float, float] = (0.0, 0.0, 0.0)
    # The daemon's idle policy: its bulk_spin_us and how its run queue looks went.
    idle_policy: dict[str, int] = field(default_factory=dict)
    perftest: Perftest | None = None
    engine_ucx: str = ""  # the libucp the engine runs with

    def to_dict(self) -> dict[str, Any]:
        daemon = None
        if self.daemon is not None:
            daemon = {**asdict(self.daemon), "rss_over_pool_MiB": self.daemon.rss_over_pool_MiB}
        return {
            "transport": self.transport,
            "rounds": self.rounds,
            "cases": [case.to_dict() for case in self.cases],
            "e2e": self.e2e,
            "daemon": daemon,
            "loadavg_start": list(self.load_start),
            "loadavg_end": list(self.load_end),
            "idle_policy": self.idle_policy,
            "engine_ucx_version": self.engine_ucx,
            "perftest": None if self.perftest is None else self.perftest.to_dict(),
        }


@dataclass(frozen=True)
class RpcBenchSettings:
    rounds: int = 7
    lat_iterations: int = 20_000
    bw_iterations: int = 2_000
    bw_window: int = 16
    e2e_ops: int = 5_000
    buffer_pool_size: int = 256 * MiB
    # The daemon's bulk_spin_us (None: the daemon's default).
    bulk_spin_us: int | None = None
    # default: the release build of the source tree the package was built from
    examples_dir: Path | None = None
    perftest: str = PERFTEST  # a path or a name on PATH


def run_rpc_bench(
    transports: tuple[MeasuredTransport, ...] = ("auto", "tcp"),
    settings: RpcBenchSettings | None = None,
    *,
    on_step: Callable[[str], None] = lambda _: None,
) -> list[RpcBenchReport]:
    settings = settings or RpcBenchSettings()
    examples = find_examples(settings.examples_dir, on_step=on_step)
    perftest = probe_perftest(settings.perftest)
    return [_one_transport(t, settings, examples, perftest, on_step) for t in transports]


def _tool_env(transport: MeasuredTransport) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("UCX_TLS", None)
    if transport == "tcp":
        env["UCX_TLS"] = "tcp,self"
    return env


# One side of a round's case: its name and its measurement.
_Turn = tuple[str, Callable[[], Any]]


def _bracketed(
    examples: Examples, turns: list[_Turn], engine_first: bool
) -> tuple[Placement, dict[str, Any]]:
    """``turns`` (the engine first) in the round's order, between two core-to-core readings."""
    before = core_to_core_ns(examples.core_to_core)
    ordered = turns if engine_first else list(reversed(turns))
    results = {name: measure() for name, measure in ordered}
    return Placement(before, core_to_core_ns(examples.core_to_core)), results


def _one_transport(
    transport: MeasuredTransport,
    settings: RpcBenchSettings,
    examples: Examples,
    perftest: Perftest,
    on_step: Callable[[str], None],
) -> RpcBenchReport:
    import benchfs_native

    report = RpcBenchReport(transport=transport, rounds=settings.rounds, perftest=perftest,
                            engine_ucx=benchfs_native.build_info()["ucx"])  # fmt: skip
    report.load_start = os.getloadavg()
    env = _tool_env(transport)
    s = settings
    with bench_scope(None, "benchfs-bench-rpc-", grace_s=DAEMON_GRACE_S) as (life, tmp):
        daemon = _start_daemon(life, tmp, transport, settings)
        registry = str(tmp / "registry")
        client = benchfs_native.Client(
            registry, 1, transport=transport, name="bench-rpc", max_in_flight=64
        )
        # The like-for-like references first; perftest -y where it has it.
        copying = (PERFTEST_LAT_COPY,) if perftest.copies else ()
        rtt_references = (PINGPONG_COPY, *copying, PERFTEST_LAT)
        rtt_perftests = [
            (ref.key, functools.partial(
                run_perftest, "ucp_am_lat", 4096, s.lat_iterations, env=env, timeout_s=300,
                binary=perftest.binary, recv_copy=ref.reads_payload))
            for ref in rtt_references[1:]
        ]  # fmt: skip
        bw_perftests = [(PERFTEST_BW, env), (PERFTEST_BW_PRIVATE, {**env, **PRIVATE_ALLOC})]
        with client:
            rtt: list[CaseRound] = []
            bw: list[CaseRound] = []
            engine_p99: list[float] = []
            for r in range(settings.rounds):
                engine_first = r % 2 == 0
                on_step(f"[{transport}] round {r + 1}: 4 KiB round trip")
                placement, got = _bracketed(examples, [
                    ("engine", lambda: client.bench_ping(0, 4096, s.lat_iterations, echo=True)),
                    *rtt_perftests,
                    ("copy", lambda: run_am_pingpong(
                        examples.am_pingpong, lat_iterations=s.lat_iterations, bw_iterations=10,
                        bw_size=4096, recv_copy=True, env=env)),
                ], engine_first)  # fmt: skip
                engine_p99.append(got["engine"]["p99_us"])
                rtt.append(CaseRound(engine_first, placement, got["engine"]["p50_us"], {
                    PINGPONG_COPY.key: got["copy"].rtt_p50_us,
                    **{ref.key: got[ref.key].rtt_p50_us for ref in rtt_references[1:]},
                }))  # fmt: skip
                on_step(f"[{transport}] round {r + 1}: 1 MiB bandwidth")
                placement, got = _bracketed(examples, [
                    ("engine", lambda: client.bench_ping(
                        0, MiB, s.bw_iterations, warmup=100, echo=False, window=s.bw_window)),
                    *[(ref.key, functools.partial(
                        run_perftest, "ucp_am_bw", MiB, s.bw_iterations, env=ref_env,
                        timeout_s=300, binary=perftest.binary))
                      for ref, ref_env in bw_perftests],
                    # am_pingpong always runs its ping-pong first: a short one here.
                    ("binding", lambda: run_am_pingpong(
                        examples.am_pingpong, lat_iterations=100, bw_iterations=s.bw_iterations,
                        window=s.bw_window, recv_buffers=s.bw_window, huge_source=True,
                        env=env)),
                ], engine_first)  # fmt: skip
                bw.append(CaseRound(engine_first, placement, got["engine"]["MiBps"], {
                    **{ref.key: got[ref.key].bandwidth_MiBps for ref, _ in bw_perftests},
                    PINGPONG_BW.key: got["binding"].bandwidth_MiBps,
                }))  # fmt: skip
            report.cases = [
                RpcCase("4 KiB RTT p50", "us", False, RTT_TARGET, rtt_references, tuple(rtt)),
                RpcCase("1 MiB bandwidth", "MiB/s", True, BW_TARGET,
                        (PERFTEST_BW, PERFTEST_BW_PRIVATE, PINGPONG_BW), tuple(bw)),
            ]  # fmt: skip
            report.e2e = {"rtt_p99_us": statistics.median(engine_p99)}
            stats = client.stats(0)
            report.idle_policy = {
                "bulk_spin_us": daemon.bulk_spin_us,
                "bulk_spin_free": int(stats.get("bulk_spin_free", 0)),
                "bulk_spin_busy": int(stats.get("bulk_spin_busy", 0)),
            }
        on_step(f"[{transport}] end to end 4 KiB write and read")
        one_at_a_time = benchfs_native.Client(
            registry, 1, transport=transport, name="bench-e2e", max_in_flight=1
        )
        with one_at_a_time:
            report.e2e.update(_end_to_end(one_at_a_time, settings.e2e_ops))
        report.daemon = DaemonFigures(
            registered_after_ms=daemon.registered_ms,
            peak_rss_MiB=_peak_rss_MiB(daemon.process.pid),
            buffer_pool_MiB=settings.buffer_pool_size / MiB,
        )
    report.load_end = os.getloadavg()
    return report


def _end_to_end(client: Any, ops: int) -> dict[str, float]:
    """4 KiB writes then reads through the daemon, one at a time."""
    out: dict[str, float] = {}
    common: dict[str, Any] = {
        "file_name": "e2e",
        "rank": 0,
        "ranks": 1,
        "transfer_size": 4096,
        "block_size": 4096 * ops,
        "segments": 1,
        "file_per_process": True,
    }
    for phase in ("write", "read"):
        result = client.run_phase(phase=phase, **common)
        out[f"{phase}_p50_us"] = result["p50_ns"] / 1e3
        out[f"{phase}_p99_us"] = result["p99_ns"] / 1e3
    return out


@dataclass
class _Daemon:
    process: ManagedProcess
    registered_ms: float
    bulk_spin_us: int


def _start_daemon(
    life: Lifecycle, tmp: Path, transport: MeasuredTransport, bench: RpcBenchSettings
) -> _Daemon:
    """The daemon, which ``life`` stops, once it has registered."""
    chosen = {} if bench.bulk_spin_us is None else {"bulk_spin_us": bench.bulk_spin_us}
    settings = DaemonSettings(
        node_name="bench0",
        node_id=0,
        data_dir=str(tmp / "data"),
        registry_dir=str(tmp / "registry"),
        transport=transport,
        buffer_pool_size=bench.buffer_pool_size,
        buffered=True,
        **chosen,
    )
    config = write_daemon_config(tmp / "daemon.toml", settings)
    log = tmp / "daemon.log"
    process = life.start(
        daemon_argv(config), name="the benchmark daemon", stdout=subprocess.DEVNULL, stderr=log
    )
    deadline = time.monotonic() + 30
    while True:
        match = _REGISTERED.search(log.read_text(errors="replace"))
        if match:
            return _Daemon(process, float(match.group(1)), settings.bulk_spin_us)
        if process.returncode is not None:
            raise LaunchError(f"the benchmark daemon exited: {log.read_text().strip()}")
        if time.monotonic() > deadline:
            raise LaunchError("the benchmark daemon did not register within 30 s")
        time.sleep(0.02)


def _peak_rss_MiB(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise LaunchError(f"no VmHWM in /proc/{pid}/status")
