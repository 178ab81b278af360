#!/usr/bin/env python3
"""The mount's session spin off against on, in alternating runs of
``benchfs bench mount``.

Each run is one ``benchfs bench mount --json`` (its own four daemons and
mount, paired rounds of fio on the mount against the native client); the
runs alternate between the spins given (``--spins 0 50``: 0, 50, 0, 50, ...
with the order of each pair swapped every other pair), so that every
setting meets the same stretch of a shared machine. For every run the
output gives, against the native client, the median of the per-round
differences of the 4 KiB p50 (mount - native, us) and of the per-round
1 MiB ratios (mount / native), with the load average (1 min) at its start
and end (on stderr as each run ends); then per spin the median of those
run medians, and the median of every round of every run (the pairs
pooled). ``--json`` keeps every run's per-round figures and the mount's
counts at unmount (requests on the session thread, spins that found the
next request).

Usage:
  .venv/bin/python benchmarks/mount_session_spin.py --spins 0 50 [--pairs 3]
      [--rounds 5] [--seq-size 64MiB] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from typing import Any

CASES = (
    ("1 MiB sequential write", "1M write x"),
    ("1 MiB sequential read", "1M read x"),
    ("4 KiB sequential write p50, QD1", "4K write +us"),
    ("4 KiB sequential read p50, QD1", "4K read +us"),
)


def one_run(spin: int, args: argparse.Namespace) -> dict[str, Any]:
    argv = [
        sys.executable, "-m", "benchfs", "bench", "mount", "--json",
        "--session-spin", str(spin), "--rounds", str(args.rounds),
        "--seq-size", args.seq_size, "--threads", str(args.threads),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"benchfs bench mount --session-spin {spin} failed:\n{done.stderr}")
    report = json.loads(done.stdout)
    medians = {
        case["name"]: case["paired"]["median"]
        for case in report["cases"]
        if case["reference_name"] == "native"
    }
    per_round = {
        case["name"]: case["paired"]["per_round"]
        for case in report["cases"]
        if case["reference_name"] == "native"
    }
    load = report["load_average"]
    return {
        "spin_us": spin,
        "load": [load["start"][0], load["end"][0]],
        "medians": medians,
        "per_round": per_round,
        "mount_counts": report.get("mount_counts", []),
        "native_4k_p50_us": {
            case["name"]: case["reference"]
            for case in report["cases"]
            if case["reference_name"] == "native" and case["unit"] == "us"
        },
        "mount_4k_p50_us": {
            case["name"]: case["mount"]
            for case in report["cases"]
            if case["reference_name"] == "native" and case["unit"] == "us"
        },
    }


def order(spins: list[int], pairs: int) -> list[int]:
    """Every spin once per pair, the order reversed every other pair."""
    runs: list[int] = []
    for p in range(pairs):
        runs += spins if p % 2 == 0 else list(reversed(spins))
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spins", type=int, nargs="+", default=[0, 50])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seq-size", default="64MiB")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs = []
    for spin in order(args.spins, args.pairs):
        run = one_run(spin, args)
        runs.append(run)
        figures = "  ".join(
            f"{label} {run['medians'][name]:+.0f}"
            if label.endswith("us")
            else f"{label} {run['medians'][name]:.2f}"
            for name, label in CASES
        )
        p50 = " / ".join(
            f"{run['native_4k_p50_us'][name]:.0f}-{run['mount_4k_p50_us'][name]:.0f}"
            for name, _ in CASES[2:]
        )
        # Progress on stderr, so that --json keeps stdout to itself.
        counts = " ".join(run["mount_counts"])
        print(
            f"spin {spin:>4} us  load {run['load'][0]:.1f}-{run['load'][1]:.1f}  {figures}"
            f"  (4K p50 native-mount us, write / read: {p50})  [{counts}]",
            file=sys.stderr,
            flush=True,
        )
    summary = {
        spin: {
            name: statistics.median(r["medians"][name] for r in runs if r["spin_us"] == spin)
            for name, _ in CASES
        }
        for spin in args.spins
    }
    pooled = {
        spin: {
            name: statistics.median(
                v for r in runs if r["spin_us"] == spin for v in r["per_round"][name]
            )
            for name, _ in CASES
        }
        for spin in args.spins
    }
    if args.json:
        document = {"runs": runs, "median_of_runs": summary, "median_of_all_rounds": pooled}
        print(json.dumps(document, indent=2))
        return 0
    for title, table in (("median of runs", summary), ("median of all rounds", pooled)):
        for spin, medians in table.items():
            figures = "  ".join(f"{label} {medians[name]:.2f}" for name, label in CASES)
            print(f"{title}, spin {spin:>4} us: {figures}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
