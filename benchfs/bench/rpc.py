"""The engine's RPC layer against ucx_perftest on the same transport, in one run.

For each transport (UCX's own choice, which is shared memory on one host,
and tcp) one daemon runs as its own process and this process is the
client. Rounds alternate engine and ucx_perftest:

- 4 KiB round trip: echoed pings, one outstanding, against ``ucp_am_lat``
  (which reports half a round trip; doubled here to compare like with
  like);
- 1 MiB bandwidth: one-way pings, a window of them, against ``ucp_am_bw``;
- end to end through the daemon (buffered storage): 4 KiB writes then reads,
  one at a time, p50 and p99.

The daemon's start-to-registered time and its peak RSS under this load are
reported beside the buffer pool it was given.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchfs.cluster.processes import ManagedProcess, start_process, stop_process
from benchfs.daemon.settings import DaemonSettings, write_daemon_config
from benchfs.errors import LaunchError
from benchfs.launchers.programs import daemon_argv
from benchfs.tools.ucx_perftest import run_perftest

# The transports compared: UCX's own choice (shared memory on one host) and tcp.
MeasuredTransport = Literal["auto", "tcp"]
MiB = 1024 * 1024
_REGISTERED = re.compile(r"registered in (\d+(?:\.\d+)?) ms")


@dataclass(frozen=True)
class RpcCase:
    name: str
    engine: float
    ucx_perftest: float
    unit: str
    higher_is_better: bool
    target: float  # engine / perftest must be <= target (lower is better) or >= target

    @property
    def ratio(self) -> float:
        return self.engine / self.ucx_perftest if self.ucx_perftest > 0 else 0.0

    @property
    def met(self) -> bool:
        return self.ratio >= self.target if self.higher_is_better else self.ratio <= self.target

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio, "met": self.met}


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
        }


@dataclass(frozen=True)
class RpcBenchSettings:
    rounds: int = 3
    lat_iterations: int = 20_000
    bw_iterations: int = 2_000
    bw_window: int = 16
    e2e_ops: int = 5_000
    buffer_pool_size: int = 256 * MiB


def run_rpc_bench(
    transports: tuple[MeasuredTransport, ...] = ("auto", "tcp"),
    settings: RpcBenchSettings | None = None,
    *,
    on_step: Callable[[str], None] = lambda _: None,
) -> list[RpcBenchReport]:
    settings = settings or RpcBenchSettings()
    return [_one_transport(t, settings, on_step) for t in transports]


def _perftest_env(transport: MeasuredTransport) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("UCX_TLS", None)
    if transport == "tcp":
        env["UCX_TLS"] = "tcp,self"
    return env


def _one_transport(
    transport: MeasuredTransport, settings: RpcBenchSettings, on_step: Callable[[str], None]
) -> RpcBenchReport:
    import benchfs_native

    report = RpcBenchReport(transport=transport, rounds=settings.rounds)
    env = _perftest_env(transport)
    with (
        tempfile.TemporaryDirectory(prefix="benchfs-bench-rpc-") as tmp,
        _daemon(Path(tmp), transport, settings.buffer_pool_size) as daemon,
    ):
        registry = str(Path(tmp) / "registry")
        client = benchfs_native.Client(
            registry, 1, transport=transport, name="bench-rpc", max_in_flight=64
        )
        with client:
            rtt: list[tuple[float, float, float]] = []  # engine p50, engine p99, perftest rtt
            bw: list[tuple[float, float]] = []
            for r in range(settings.rounds):
                on_step(f"[{transport}] round {r + 1}: 4 KiB round trip")
                pt = run_perftest("ucp_am_lat", 4096, settings.lat_iterations, env=env)
                ours = client.bench_ping(0, 4096, settings.lat_iterations, echo=True)
                rtt.append((ours["p50_us"], ours["p99_us"], pt.rtt_p50_us))
                on_step(f"[{transport}] round {r + 1}: 1 MiB bandwidth")
                ours_bw = client.bench_ping(
                    0, MiB, settings.bw_iterations, warmup=100, echo=False,
                    window=settings.bw_window,
                )  # fmt: skip
                pt_bw = run_perftest("ucp_am_bw", MiB, settings.bw_iterations, env=env)
                bw.append((ours_bw["MiBps"], pt_bw.bandwidth_MiBps))
            med = statistics.median
            report.cases = [
                RpcCase("4 KiB round trip p50", med(x[0] for x in rtt),
                        med(x[2] for x in rtt), "us", False, 2.0),
                RpcCase("1 MiB bandwidth", med(x[0] for x in bw),
                        med(x[1] for x in bw), "MiB/s", True, 0.8),
            ]  # fmt: skip
            report.e2e = {"rtt_p99_us": med(x[1] for x in rtt)}
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


@contextmanager
def _daemon(tmp: Path, transport: MeasuredTransport, pool: int) -> Iterator[_Daemon]:
    config = write_daemon_config(
        tmp / "daemon.toml",
        DaemonSettings(
            node_name="bench0",
            node_id=0,
            data_dir=str(tmp / "data"),
            registry_dir=str(tmp / "registry"),
            transport=transport,
            buffer_pool_size=pool,
            buffered=True,
        ),
    )
    log = tmp / "daemon.log"
    process = start_process(
        daemon_argv(config), name="the benchmark daemon", stdout=subprocess.DEVNULL, stderr=log
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            match = _REGISTERED.search(log.read_text(errors="replace"))
            if match:
                break
            if process.returncode is not None:
                raise LaunchError(f"the benchmark daemon exited: {log.read_text().strip()}")
            if time.monotonic() > deadline:
                raise LaunchError("the benchmark daemon did not register within 30 s")
            time.sleep(0.02)
        yield _Daemon(process, float(match.group(1)))
    finally:
        stop_process(process, grace_s=15)


def _peak_rss_MiB(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise LaunchError(f"no VmHWM in /proc/{pid}/status")
