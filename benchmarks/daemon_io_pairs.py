#!/usr/bin/env python3
"""Reads and writes through one local daemon, two setups in paired rounds.

Each round runs both sides back to back, the side that goes first
alternating from round to round; a side is a fresh process that starts
one daemon (O_DIRECT storage unless ``--buffered``, shared memory, default
settings otherwise) in a temporary directory under ``--dir`` and drives it
with the native client (`Client.run_phase`, one rank, sequential):

- ``w4k_qd1`` / ``o4k_qd1`` / ``r4k_qd1``: 4 KiB writes to a fresh file
  (each extends its chunk file), the same writes again (overwrites within
  the file's size), then reads, one at a time (p50 and p99 per operation);
- ``w4k_qd16`` / ``o4k_qd16`` / ``r4k_qd16``: the same, 16 in flight
  (operations per second);
- ``w1m_qd16`` / ``r1m_qd16``: 1 MiB, 16 in flight (MiB/s).

Once per round fio does the 4 KiB cases on the disk itself (`psync`,
`direct=1`, one job, queue depth 1, sequential) in the same directory,
the reference the daemon's queue-depth-1 latencies stand beside. Its
writes run twice: on a fresh file that each write extends
(``fallocate=none``, ``disk_w4k_qd1_fresh_*``), as the daemon's writes
extend their chunk files, and on a file fio preallocated first (its
default, ``disk_w4k_qd1_*``). On ext4 only the preallocated case is an
overwrite within the file's size; an extending O_DIRECT write is
punted to a kernel worker thread by io_uring (docs/perf-log/storage-writes.md,
"Storage: writes that extend their file").

The sides:

- ``--compare-extension DIR``: the installed `benchfs_native` against the
  one in DIR (another build, e.g. main's, copied there) as the baseline;
- ``--compare-trace``: the event log on (daemon and client write traces)
  against off as the baseline.

For every case the output gives each side's median round and the median,
quartiles and range of the per-round ratios side / baseline
(`benchfs.bench.paired`); for latencies below 1 is faster, for rates above.
`store_sqes_per_submit` is the daemon store's operations per
`io_uring_enter` after the 4 KiB cases; `*_cpu_us_per_op` the CPU time of
the daemon (`/proc/<pid>/stat`, its io-wq workers included) and of the
client process per operation of a case (the daemon busy-polls a little after each request,
so its figure moves with how requests arrive, not only with its work).

Usage:
  .venv/bin/python benchmarks/daemon_io_pairs.py --compare-trace [--rounds 7] [--dir D]
  .venv/bin/python benchmarks/daemon_io_pairs.py --compare-extension /tmp/old [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchfs.bench.paired import PairedRatios
from benchfs.cluster.processes import start_process, stop_process
from benchfs.daemon.settings import DaemonSettings, write_daemon_config
from benchfs.launchers.programs import daemon_argv

KiB = 1024
MiB = 1024 * KiB
_REGISTERED = re.compile(r"registered in (\d+(?:\.\d+)?) ms")
# name: (transfer size, operations, in flight, figure)
CASES: dict[str, tuple[int, int, int, str]] = {
    "4k_qd1": (4 * KiB, 2000, 1, "latency"),
    "4k_qd16": (4 * KiB, 32768, 16, "iops"),
    "1m_qd16": (MiB, 1024, 16, "MiBps"),
}


def _wait_registered(log: Path, process: Any) -> None:
    deadline = time.monotonic() + 30
    while not _REGISTERED.search(log.read_text(errors="replace")):
        if process.returncode is not None:
            raise SystemExit(f"error: the daemon exited: {log.read_text().strip()}")
        if time.monotonic() > deadline:
            raise SystemExit("error: the daemon did not register within 30 s")
        time.sleep(0.02)


def _cpu_ns(pid: int) -> int:
    """CPU time of ``pid`` so far, user and system, threads that ended
    included (the io-wq workers come and go; a sum over the live threads'
    schedstat would lose theirs). Clock-tick resolution (10 ms)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def side_run(directory: Path, trace: bool, buffered: bool) -> dict[str, float]:
    """One side: a daemon, the cases through it, the figures as JSON."""
    import benchfs_native

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="daemon-io-pairs-", dir=directory) as tmp_s:
        tmp = Path(tmp_s)
        trace_dir = tmp / "trace" if trace else None
        config = write_daemon_config(
            tmp / "daemon.toml",
            DaemonSettings(
                node_name="pairs0",
                node_id=0,
                data_dir=str(tmp / "data"),
                registry_dir=str(tmp / "registry"),
                transport="auto",
                buffer_pool_size=256 * MiB,
                buffered=buffered,
                trace_dir=None if trace_dir is None else str(trace_dir),
            ),
        )
        log = tmp / "daemon.log"
        process = start_process(
            daemon_argv(config), name="the daemon", stdout=subprocess.DEVNULL, stderr=log
        )
        try:
            _wait_registered(log, process)
            for case, (size, ops, depth, figure) in CASES.items():
                client = benchfs_native.Client(
                    str(tmp / "registry"), 1, transport="auto", name=f"pairs-{case}",
                    max_in_flight=depth, trace_dir=None if trace_dir is None else str(trace_dir),
                )  # fmt: skip
                with client:
                    # 4 KiB files are written twice: first each write
                    # extends its chunk file, then ("o", an overwrite)
                    # each lands within the file's size.
                    phases = ["w", "o", "r"] if size == 4 * KiB else ["w", "r"]
                    for letter in phases:
                        phase = "read" if letter == "r" else "write"
                        t0 = time.perf_counter()
                        cpu0 = (_cpu_ns(process.pid), time.process_time_ns())
                        r = client.run_phase(
                            phase=phase, file_name=f"f{case}", rank=0, ranks=1,
                            transfer_size=size, block_size=size * ops, segments=1,
                            file_per_process=True,
                        )  # fmt: skip
                        seconds = time.perf_counter() - t0
                        key = f"{letter}{case}"
                        out[f"{key}_daemon_cpu_us_per_op"] = (
                            (_cpu_ns(process.pid) - cpu0[0]) / ops / 1e3
                        )
                        out[f"{key}_client_cpu_us_per_op"] = (
                            (time.process_time_ns() - cpu0[1]) / ops / 1e3
                        )
                        if figure == "latency":
                            out[f"{key}_p50_us"] = r["p50_ns"] / 1e3
                            out[f"{key}_p99_us"] = r["p99_ns"] / 1e3
                        elif figure == "iops":
                            out[f"{key}_iops"] = ops / seconds
                        else:
                            out[f"{key}_MiBps"] = size * ops / MiB / seconds
                    if case == "4k_qd16":
                        # The store's operations per io_uring_enter so far.
                        store = client.stats(0)["store"]
                        out["store_sqes_per_submit"] = store["sqes"] / max(store["submits"], 1)
        finally:
            stop_process(process, grace_s=15)
        if trace_dir is not None:
            out["trace_bytes_per_op"] = sum(
                f.stat().st_size for f in trace_dir.glob("*.bftrace")
            ) / sum((3 if size == 4 * KiB else 2) * ops for size, ops, _, _ in CASES.values())
    return out


def fio_disk(directory: Path) -> dict[str, float]:
    """fio's 4 KiB queue-depth-1 latencies on the disk itself."""
    out: dict[str, float] = {}
    size, ops, _, _ = CASES["4k_qd1"]
    # (key, rw, extra options): the fresh-file write first, then the
    # preallocated one, whose file the read reads back.
    runs = (
        ("w4k_qd1_fresh", "write", ["--fallocate=none"]),
        ("w4k_qd1", "write", []),
        ("r4k_qd1", "read", []),
    )
    with tempfile.TemporaryDirectory(prefix="daemon-io-pairs-fio-", dir=directory) as tmp:
        for key, rw, extra in runs:
            name = "fresh" if extra else "disk"
            proc = subprocess.run(
                ["fio", f"--name={name}", f"--directory={tmp}", f"--rw={rw}", f"--bs={size}",
                 f"--size={size * ops}", "--ioengine=psync", "--direct=1", "--numjobs=1",
                 *extra, "--output-format=json"],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            clat = json.loads(proc.stdout)["jobs"][0][rw]["clat_ns"]["percentile"]
            out[f"disk_{key}_p50_us"] = clat["50.000000"] / 1e3
            out[f"disk_{key}_p99_us"] = clat["99.000000"] / 1e3
    return out


def _side(args: argparse.Namespace, side: str) -> dict[str, float]:
    env = dict(os.environ)
    cmd = [sys.executable, __file__, "--side-run", "--dir", str(args.dir)]
    if args.buffered:
        cmd.append("--buffered")
    if side == "baseline" and args.compare_extension:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(args.compare_extension), *filter(None, [env.get("PYTHONPATH")])]
        )
    if side == "side" and args.compare_trace:
        cmd.append("--trace")
    proc = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    result: dict[str, float] = json.loads(proc.stdout)
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    p.add_argument("--buffered", action="store_true", help="the daemon stores without O_DIRECT")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--compare-extension", type=Path, metavar="DIR")
    mode.add_argument("--compare-trace", action="store_true")
    p.add_argument("--side-run", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.side_run:
        print(json.dumps(side_run(args.dir, args.trace, args.buffered)))
        return
    if not (args.compare_extension or args.compare_trace):
        p.error("give --compare-extension DIR or --compare-trace")
    if args.compare_extension and not (args.compare_extension / "benchfs_native").is_dir():
        p.error(f"--compare-extension {args.compare_extension}: no benchfs_native package there")
    rounds: dict[str, list[dict[str, float]]] = {"side": [], "baseline": [], "disk": []}
    load = [os.getloadavg()[0]]
    for i in range(args.rounds):
        order = ("side", "baseline") if i % 2 == 0 else ("baseline", "side")
        for side in order:
            rounds[side].append(_side(args, side))
        rounds["disk"].append(fio_disk(args.dir))
        print(f"round {i + 1}/{args.rounds} done", file=sys.stderr)
    load.append(os.getloadavg()[0])
    med = statistics.median
    cases: dict[str, Any] = {}
    only_side = {k: med(r[k] for r in rounds["side"]) for k in rounds["side"][0].keys()
                 - rounds["baseline"][0].keys()}  # fmt: skip
    for key in rounds["side"][0].keys() & rounds["baseline"][0].keys():
        a = [r[key] for r in rounds["side"]]
        b = [r[key] for r in rounds["baseline"]]
        cases[key] = {
            "side": med(a), "baseline": med(b), "ratio": PairedRatios.of(a, b).to_json()
        }  # fmt: skip
    disk = {key: med(r[key] for r in rounds["disk"]) for key in rounds["disk"][0]}
    sides = (
        {"side": "installed benchfs_native", "baseline": f"{args.compare_extension}"}
        if args.compare_extension
        else {"side": "event log on", "baseline": "event log off"}
    )
    report = {
        "rounds": args.rounds,
        "load_avg_start_end": load,
        "daemon_storage": "buffered" if args.buffered else "O_DIRECT",
        "sides": sides,
        "cases": dict(sorted(cases.items())),
        "side_only": only_side,
        "disk_fio_psync_direct_qd1": disk,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
