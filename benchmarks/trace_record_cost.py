#!/usr/bin/env python3
"""CPU time the event log adds per operation, in paired rounds.

Runs the engine's bulk loop (`benchfs_native.bench_storage`, 4 KiB random
reads, queue depth 32, O_DIRECT) with the event log on and off, the side
that goes first alternating, and takes this process's CPU time
(`time.process_time_ns`, every thread) per operation of each run. The loop
waits in `io_uring_enter` and never spins, so its CPU time is its work;
the on/off difference is what recording costs: two 48-byte records per
operation here (a submit and a storage op), written in 192 KiB blocks, the
same code that records an RPC through a daemon.

Usage: .venv/bin/python benchmarks/trace_record_cost.py [--rounds 12] [--mib 128] [--dir D]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import benchfs_native

MiB = 1024 * 1024
BLOCK = 4096


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--mib", type=int, default=128, help="MiB read per run")
    p.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = p.parse_args()
    total = args.mib * MiB
    ops = total // BLOCK
    cpu: dict[str, list[float]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory(prefix="trace-record-cost-", dir=args.dir) as tmp:
        data = str(Path(tmp) / "data")
        benchfs_native.bench_storage(
            data, pattern="write", block_size=MiB, queue_depth=8, total_bytes=total
        )
        for i in range(args.rounds):
            for side in ("on", "off") if i % 2 == 0 else ("off", "on"):
                trace = str(Path(tmp) / f"trace-{i}") if side == "on" else None
                t0 = time.process_time_ns()
                benchfs_native.bench_storage(
                    data, pattern="randread", block_size=BLOCK, queue_depth=32,
                    total_bytes=total, trace_dir=trace,
                )  # fmt: skip
                cpu[side].append((time.process_time_ns() - t0) / ops)
    diffs = [on - off for on, off in zip(cpu["on"], cpu["off"], strict=True)]
    q1, _, q3 = statistics.quantiles(diffs, n=4, method="inclusive")
    report = {
        "rounds": args.rounds,
        "ops_per_run": ops,
        "cpu_ns_per_op_on": statistics.median(cpu["on"]),
        "cpu_ns_per_op_off": statistics.median(cpu["off"]),
        "paired_on_minus_off_ns_per_op": {
            "median": statistics.median(diffs),
            "q1": q1,
            "q3": q3,
            "min": min(diffs),
            "max": max(diffs),
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
