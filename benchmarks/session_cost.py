#!/usr/bin/env python3
"""What one client session costs a daemon: memory and accept time, per transport.

Starts one daemon as `benchfs run` does (`python -m benchfs.node.daemon
--config FILE`, an 8 MiB buffer pool), then opens client sessions with it one
by one, up to `--sessions` (each a `benchfs_native.Client` of its own UCX
worker, as every rank of a job is), and reports per transport (`shm`:
shared memory, `tcp`: UCX over loopback tcp; the daemon's `transport`
setting, which picks `UCX_TLS`):

- `connect_ms`: median time of one client's connect (read the membership,
  open its worker, the connect/accept round trip) at each session count;
- `rss_kib` / `hwm_kib`: the daemon's /proc/<pid>/status VmRSS and VmHWM
  with that many sessions open;
- `fds`: the daemon's open file descriptors (a tcp session holds sockets;
  at 49,152 sessions that is the limit to check first);
- `cpu_ms`: the daemon's CPU time (utime + stime) spent on the sessions
  opened since the count before, per session: what one accept costs it;
- `per_session_kib`: (VmRSS with the most sessions - VmRSS idle) / sessions,
  the slope a daemon pays per client of the job;
- `after_close_kib`: VmRSS once every session is closed again.

Usage: .venv/bin/python benchmarks/session_cost.py [--sessions 64] [--transports shm tcp] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import benchfs_native as bn
from benchfs.cluster.processes import start_process, stop_process
from benchfs.daemon.settings import DaemonSettings, write_daemon_config
from benchfs.launchers.programs import daemon_argv

ROOT = Path(__file__).resolve().parent.parent
NAME = "sc0"


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for pid {pid}")


def cpu_s(pid: int) -> float:
    """utime + stime of ``pid``, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


@dataclass
class Point:
    sessions: int
    connect_ms: float
    rss_kib: int
    hwm_kib: int
    fds: int
    cpu_ms: float


@dataclass
class TransportCost:
    transport: str
    idle_rss_kib: int
    idle_fds: int
    points: list[Point]
    per_session_kib: float
    after_close_kib: int


def counts_up_to(most: int) -> list[int]:
    counts, n = [], 1
    while n < most:
        counts.append(n)
        n *= 2
    return [*counts, most]


def measure(transport: str, most: int) -> TransportCost:
    with tempfile.TemporaryDirectory(prefix="benchfs-sessions-") as tmp:
        registry = Path(tmp) / "registry"
        config = write_daemon_config(
            Path(tmp) / "daemon.toml",
            DaemonSettings(
                node_name=NAME,
                node_id=0,
                data_dir=f"{tmp}/data",
                registry_dir=str(registry),
                buffer_pool_size=8 << 20,
                transport=transport,
            ),
        )
        log = Path(tmp) / "daemon.log"
        proc = start_process(daemon_argv(config), name="the daemon", stderr=log, cwd=ROOT)
        clients: list[bn.Client] = []
        try:
            start = time.monotonic()
            while not (registry / f"{NAME}.json").exists():
                if proc.returncode is not None or time.monotonic() - start > 60:
                    raise RuntimeError(f"daemon did not register: {log.read_text()}")
                time.sleep(0.01)
            # One session first: the daemon's lazily built state is not a session's cost.
            warm = bn.Client(str(registry), [NAME], transport=transport, name="warm")
            warm.ping(0)
            warm.disconnect()
            time.sleep(0.5)
            idle = status_kib(proc.pid, "VmRSS")
            idle_fds = open_fds(proc.pid)
            points, times = [], []
            for count in counts_up_to(most):
                before, cpu_before = len(clients), cpu_s(proc.pid)
                while len(clients) < count:
                    t = time.perf_counter()
                    client = bn.Client(
                        str(registry), [NAME], transport=transport, name=f"s{len(clients)}"
                    )
                    times.append(time.perf_counter() - t)
                    client.ping(0)  # the session is served, not only accepted
                    clients.append(client)
                points.append(
                    Point(
                        count,
                        round(statistics.median(times[-max(1, count // 2) :]) * 1e3, 2),
                        status_kib(proc.pid, "VmRSS"),
                        status_kib(proc.pid, "VmHWM"),
                        open_fds(proc.pid),
                        round((cpu_s(proc.pid) - cpu_before) * 1e3 / (count - before), 2),
                    )
                )
            for client in clients:
                client.disconnect()
            clients.clear()
            time.sleep(0.5)
            after = status_kib(proc.pid, "VmRSS")
        finally:
            for client in clients:
                client.disconnect()
            stop_process(proc, grace_s=30)
    last = points[-1]
    return TransportCost(
        transport,
        idle,
        idle_fds,
        points,
        round((last.rss_kib - idle) / last.sessions, 1),
        after,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--transports", nargs="+", default=["shm", "tcp"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.sessions < 1:
        parser.error(f"--sessions must be at least 1, got {args.sessions}")
    costs = [measure(t, args.sessions) for t in args.transports]
    if args.json:
        print(json.dumps([asdict(c) for c in costs], indent=2))
        return
    for c in costs:
        print(f"{c.transport}: idle VmRSS {c.idle_rss_kib} KiB, {c.idle_fds} fds")
        print("  sessions  connect_ms  rss_kib  hwm_kib  fds  cpu_ms")
        for p in c.points:
            print(
                f"  {p.sessions:8d}  {p.connect_ms:10.2f}  {p.rss_kib:7d}  {p.hwm_kib:7d}"
                f"  {p.fds:4d}  {p.cpu_ms:6.2f}"
            )
        print(
            f"  per session {c.per_session_kib} KiB;"
            f" VmRSS after closing all {c.after_close_kib} KiB"
        )


if __name__ == "__main__":
    main()
