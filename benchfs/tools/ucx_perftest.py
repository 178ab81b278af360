"""Run ``ucx_perftest`` (package ucx-utils) as server and client on this host.

It is the yardstick for the RPC layer: ``ucp_am_lat`` (active message
ping-pong; perftest reports *half* a round trip) and ``ucp_am_bw`` (one-way
active messages). An eager payload is left unread unless the perftest has
and is given ``-y`` (UCX 1.15 and later: each received payload copied
out, as an RPC must deliver it). The server listens on a TCP port for the
out-of-band exchange and accepts exactly one peer, so readiness is read
from /proc/net/tcp instead of probing the port.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from benchfs.cluster.processes import ManagedProcess, kill_group, start_process
from benchfs.errors import ToolError
from benchfs.tools.process import run_tool

PerftestName = Literal["ucp_am_lat", "ucp_am_bw"]
PERFTEST = "ucx_perftest"
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp
_COPY_OPTION = re.compile(r"^\s*-y\s", re.MULTILINE)
# `ucx_info -v`'s first line: "# Version 1.13.1" (1.13), "# Library version: 1.15.0" (1.15).
_UCX_VERSION = re.compile(r"^# (?:Library version:|Version) (\S+)", re.MULTILINE)
MISSING = "ucx_perftest not found (install ucx-utils)"


@dataclass(frozen=True)
class PerftestResult:
    test: str
    size: int
    iterations: int
    half_rtt_p50_us: float  # ucp_am_lat: perftest's median latency, half a round trip
    half_rtt_mean_us: float
    bandwidth_MiBps: float  # perftest's MB/s are 2^20 bytes per second

    @property
    def rtt_p50_us(self) -> float:
        return 2 * self.half_rtt_p50_us


@dataclass(frozen=True)
class Perftest:
    """A ucx_perftest binary, the UCX it runs with and whether it can copy payloads out."""

    binary: str
    ucx_version: str  # "unknown" without a ucx_info beside it or on PATH
    copies: bool  # has -y

    def to_dict(self) -> dict[str, str | bool]:
        return {"binary": self.binary, "ucx_version": self.ucx_version, "copies": self.copies}


def probe_perftest(binary: str = PERFTEST) -> Perftest:
    """``binary`` (a path, or a name on PATH) found, its UCX and its options read."""
    found = shutil.which(binary)
    if found is None:
        raise ToolError(MISSING if binary == PERFTEST else f"ucx_perftest {binary} not found")
    usage = run_tool([found, "-h"], tool="ucx_perftest", where="-h", timeout_s=30.0)
    copies = _COPY_OPTION.search(usage.stdout + usage.stderr) is not None
    return Perftest(found, _ucx_version(Path(found)), copies)


def _ucx_version(perftest: Path) -> str:
    """What the ``ucx_info`` installed with ``perftest`` (else on PATH) says of its UCX."""
    beside = perftest.parent / "ucx_info"
    info = str(beside) if beside.is_file() else shutil.which("ucx_info")
    if info is None:
        return "unknown"
    said = run_tool([info, "-v"], tool="ucx_info", where="-v", timeout_s=30.0)
    found = _UCX_VERSION.search(said.stdout)
    return found.group(1) if found else "unknown"


def client_argv(
    test: PerftestName,
    size: int,
    iterations: int,
    port: int,
    cpu: int | None = None,
    *,
    binary: str = PERFTEST,
    recv_copy: bool = False,
) -> list[str]:
    return [
        binary,
        *_pin(cpu),
        "localhost",
        "-p",
        str(port),
        "-t",
        test,
        "-s",
        str(size),
        "-n",
        str(iterations),
        "-f",
        "-v",
        *(["-y"] if recv_copy else []),
    ]


def server_argv(port: int, cpu: int | None = None, *, binary: str = PERFTEST) -> list[str]:
    return [binary, *_pin(cpu), "-p", str(port)]


def _pin(cpu: int | None) -> list[str]:
    """perftest's own affinity option (each process pins itself; off by default)."""
    return [] if cpu is None else ["-c", str(cpu)]


def run_perftest(
    test: PerftestName,
    size: int,
    iterations: int,
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 120.0,
    cpus: tuple[int, int] | None = None,
    binary: str = PERFTEST,
    recv_copy: bool = False,
) -> PerftestResult:
    """One server and one client run of ``test``; the parsed final report.

    ``cpus``: (client CPU, server CPU) to pin each process to one CPU.
    ``recv_copy``: ``-y``, each received payload copied out (the server
    takes the test's parameters from the client).
    """
    client_cpu, server_cpu = cpus if cpus is not None else (None, None)
    port = free_port()
    where = f"{test} {size} B x {iterations}" + (" -y" if recv_copy else "")
    server = start_process(
        server_argv(port, server_cpu, binary=binary),
        name=f"ucx_perftest server for {where}",
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        error=ToolError,
        missing=MISSING,
    )
    try:
        _wait_listening(port, server, deadline=time.monotonic() + 10.0, where=where)
        argv = client_argv(test, size, iterations, port, client_cpu, binary=binary,
                           recv_copy=recv_copy)  # fmt: skip
        result = run_tool(
            argv,
            tool="ucx_perftest",
            where=where,
            timeout_s=timeout_s,
            env=env,
        )
        if result.returncode != 0:
            tail = (result.stderr or result.stdout).strip().splitlines()[-1:]
            raise ToolError(
                f"ucx_perftest {where} exited with {result.returncode}: {' '.join(tail)}"
            )
        server.popen.wait(timeout=10.0)
    finally:
        if server.returncode is None:
            kill_group(server)
        elif server.popen.stderr is not None:
            server.popen.stderr.close()
    return parse_report(result.stdout, test=test, size=size)


def parse_report(text: str, *, test: str, size: int) -> PerftestResult:
    """The last CSV row of ``ucx_perftest -f`` output, under its header."""
    lines = [line.strip() for line in text.splitlines()]
    headers = [i for i, line in enumerate(lines) if line.startswith("iterations,")]
    if not headers:
        raise ToolError(f"ucx_perftest {test}: no CSV report in its output")
    names = lines[headers[-1]].split(",")
    rows = [line for line in lines[headers[-1] + 1 :] if line[:1].isdigit()]
    if not rows:
        raise ToolError(f"ucx_perftest {test}: the CSV report has no rows")
    row = dict(zip(names, rows[-1].split(","), strict=False))
    try:
        return PerftestResult(
            test=test,
            size=size,
            iterations=int(row["iterations"]),
            half_rtt_p50_us=float(row["50.0_percentile_lat"]),
            half_rtt_mean_us=float(row["avg_lat"]),
            bandwidth_MiBps=float(row["overall_bw"]),
        )
    except (KeyError, ValueError) as exc:
        raise ToolError(f"ucx_perftest {test}: unexpected report row {rows[-1]!r}") from exc


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("", 0))
        port: int = probe.getsockname()[1]
        return port


def listening(port: int) -> bool:
    """Whether some socket listens on TCP ``port`` (IPv4 or IPv6)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if (
                len(fields) > 3
                and fields[3] == _LISTEN
                and int(fields[1].rsplit(":", 1)[1], 16) == port
            ):
                return True
    return False


def _wait_listening(port: int, server: ManagedProcess, *, deadline: float, where: str) -> None:
    while not listening(port):
        if server.returncode is not None:
            stream = server.popen.stderr
            error = stream.read().decode(errors="replace").strip() if stream else ""
            raise ToolError(
                f"ucx_perftest server for {where} exited with {server.returncode}: {error}"
            )
        if time.monotonic() > deadline:
            raise ToolError(
                f"ucx_perftest server for {where} did not listen on port {port} within 10 s"
            )
        time.sleep(0.02)
