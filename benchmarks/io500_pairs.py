#!/usr/bin/env python3
"""The built-in IO500 suite beside the reference io500 binary, phase by phase.

Each pair runs ``benchfs run --suite io500-quick`` twice on a fresh directory
of the same ``posix:`` target with the same sizes and stonewall, once with
the built-in loops and once with the io500 binary under it (``suite.tool =
"io500"``: the same launcher, ranks and directory), in alternating order pair
by pair. Per phase: the median of the pairs' built-in / reference ratios of
the phase's IO500 rate (GiB/s or kIOPS), with their range, and the same for
the score (the target band is 0.8-1.25). Each run's results directory is
removed once read; ``--json`` keeps every figure. As root where the guest
reports free pages to its host, the reporting is paused while the pairs run
and one untimed built-in run comes first (``guest_memory``).

The sizes default to ones that a stonewall of ``--stonewall`` seconds ends on
this machine kind rather than the item counts, so that each write phase runs
for the stonewall on both sides.

Needs the io500 binary (PATH or ``$IO500_BIN_DIR``) and mpirun.

Usage:
  .venv/bin/python benchmarks/io500_pairs.py [--pairs 3] [--stonewall 5]
      [--ranks 4] [--dir D] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchfs_runs import finished_run, workload_summary
from guest_memory import free_page_reporting_paused


def one_run(options: argparse.Namespace, reference: bool) -> dict[str, Any]:
    """One suite run: each phase's IO500 rate, and the score."""
    target = Path(tempfile.mkdtemp(prefix="io500-pairs-", dir=options.dir))
    args = [
        "--suite", "io500-quick",
        "--set", "cluster.local_nodes=1",
        "--set", f"workload.target=posix:{target}",
        "--set", f"workload.tasks_per_node={options.ranks}",
        "--set", "preflight.enabled=false",
        "--set", "history.enabled=false",
        "--set", f"suite.stonewall_s={options.stonewall}",
        "--set", f"suite.ior_easy_block_size={options.easy_block}",
        "--set", f"suite.ior_hard_segments={options.hard_segments}",
        "--set", f"suite.mdtest_easy_files={options.easy_files}",
        "--set", f"suite.mdtest_hard_files={options.hard_files}",
    ]  # fmt: skip
    if reference:
        args += ["--set", "suite.tool=io500"]
    what = f"io500-quick ({'reference' if reference else 'built-in'})"
    try:
        with finished_run(args, what, "benchfs-io500-pairs-results-") as run_dir:
            summary = workload_summary(run_dir)
    finally:
        shutil.rmtree(target, ignore_errors=True)
    rates = {p["phase"]: float(p["io500_rate"]) for p in summary["phases"]}
    # The phase's time where the summary has it (IOR's MeanTime).
    seconds = {p["phase"]: p.get("MeanTime") for p in summary["phases"]}
    return {"rates": rates, "seconds": seconds, "score": float(summary["score"])}


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def run_pairs(options: argparse.Namespace) -> dict[str, Any]:
    warm_up = one_run(options, reference=False)
    print(f"warm-up (built-in, untimed): score {warm_up['score']:.2f}", file=sys.stderr)
    pairs: list[dict[str, Any]] = []
    for index in range(options.pairs):
        order = (False, True) if index % 2 == 0 else (True, False)
        load = os.getloadavg()[0]
        done = {reference: one_run(options, reference) for reference in order}
        pairs.append({"load_1min": load, "builtin": done[False], "reference": done[True]})
        print(f"pair {index + 1}: score {done[False]['score']:.2f} / {done[True]['score']:.2f} "
              f"(built-in / reference; load {load:.1f})", file=sys.stderr)  # fmt: skip
    phases = list(pairs[0]["reference"]["rates"])
    ratios = {
        phase: [p["builtin"]["rates"][phase] / p["reference"]["rates"][phase] for p in pairs]
        for phase in phases
    }
    scores = [p["builtin"]["score"] / p["reference"]["score"] for p in pairs]
    return {
        "pairs": pairs,
        "warm_up": warm_up,
        "ratio": {phase: spread(r) for phase, r in ratios.items()},
        "score_ratio": spread(scores),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--stonewall", type=float, default=5.0, help="seconds (suite.stonewall_s)")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--easy-block", default="2g", help="ior-easy block per rank")
    parser.add_argument("--hard-segments", type=int, default=40000, help="ior-hard per rank")
    parser.add_argument("--easy-files", type=int, default=200000, help="mdtest-easy per rank")
    parser.add_argument("--hard-files", type=int, default=100000, help="mdtest-hard per rank")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()),
                        help="where the posix: target's directories go")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="every pair's figures on stdout")
    options = parser.parse_args()
    with free_page_reporting_paused() as reporting:
        found = run_pairs(options)
    found = {"free_page_reporting": reporting, "stonewall_s": options.stonewall, **found}
    if options.json:
        print(json.dumps(found, indent=2))
        return
    print(f"free page reporting: {reporting}; stonewall {options.stonewall:g} s")
    print("| phase | built-in / reference |\n|---|---|")
    for phase, r in found["ratio"].items():
        print(f"| {phase} | {r['median']:.3f} ({r['min']:.2f}-{r['max']:.2f}) |")
    r = found["score_ratio"]
    print(f"| score | {r['median']:.3f} ({r['min']:.2f}-{r['max']:.2f}) |")


if __name__ == "__main__":
    main()
