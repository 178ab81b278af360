#!/usr/bin/env python3
"""`benchfs diagnose --quick` against its time budget: wall time per round on one directory.

Slurm kills a HealthCheckProgram at 60 s, and `--quick` promises 30 s per
node (docs/DIAGNOSE.md). The test suite checks only the plan (its timed fio
steps add up to well under the budget); the wall time, which depends on the
machine and its neighbours, is measured here.

Usage: .venv/bin/python benchmarks/diagnose_budget.py [--rounds 3] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUDGET_S = 30.0


def one_round(directory: Path) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "diagnose", "--quick", "--json", "--dir", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - started
    status = json.loads(done.stdout)["status"] if done.stdout.strip() else f"exit {done.returncode}"
    return wall, status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--dir", type=Path, default=None, help="directory to test (default: a temp dir)"
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="benchfs-diagnose-budget-") as tmp:
        directory = options.dir or Path(tmp)
        walls = []
        for index in range(options.rounds):
            wall, status = one_round(directory)
            walls.append(wall)
            print(f"round {index + 1}: {wall:.1f} s ({status})")
    median = statistics.median(walls)
    print(f"median {median:.1f} s = {median / BUDGET_S:.0%} of the {BUDGET_S:g} s budget")


if __name__ == "__main__":
    main()
