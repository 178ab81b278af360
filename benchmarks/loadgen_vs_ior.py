#!/usr/bin/env python3
"""The built-in load generator beside IOR on a fast target: is the loop ever
the bottleneck?

Each case runs ``benchfs run`` twice on the same ``posix:`` directory with the
same pattern, once with the built-in ranks and once with IOR's POSIX backend
under it (``workload.tool = "ior"``: the same launcher, ranks and directory),
in alternating order round by round: 1 MiB transfers, a file per rank, each
rank reading what the next one wrote (IOR ``-a POSIX -w -r -F -C -t 1m -b
SIZE``), no stonewall, no fsync, buffered I/O. Cases: one rank on tmpfs
(``/dev/shm``) and four ranks on a disk directory through the page cache,
each on an idle machine and beside a CPU-busy neighbour (one process spinning
on a core for the whole run). Per case: the median of the rounds' built-in /
IOR ratios per direction, with their range (1.00: the loop costs nothing
IOR does not; the target is >= 0.95). Each run's results directory is
removed once read; ``--json`` keeps every figure.

As root where the guest reports free pages to its host, the reporting is
paused while the cases run (``guest_memory``: there every run's first write
moved 540-1,040 MiB/s, whichever tool, against 5,900-10,500 once the guest
kept its pages), and each case starts with one untimed built-in run that
gives the guest the memory the case needs. What was done is in the output
(``free_page_reporting``).

Needs IOR (PATH, ``$IOR_BIN_DIR`` or ``/opt/ior/bin``) and mpirun.

Usage:
  .venv/bin/python benchmarks/loadgen_vs_ior.py [--rounds 3] [--disk-dir D]
      [--json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchfs_runs import finished_run, workload_summary
from guest_memory import free_page_reporting_paused

PHASES = ("write", "read")
MIB = 1 << 20


@dataclass(frozen=True)
class Case:
    name: str
    ranks: int
    block_mib: int
    tmpfs: bool  # /dev/shm, else the disk directory (page cache)
    busy: bool  # a CPU-busy neighbour beside the run


CASES = (
    Case("1 rank, tmpfs, 2 GiB", 1, 2048, True, False),
    Case("1 rank, tmpfs, 2 GiB, CPU-busy neighbour", 1, 2048, True, True),
    Case("4 ranks, page cache, 128 MiB each", 4, 128, False, False),
    Case("4 ranks, page cache, 128 MiB each, CPU-busy neighbour", 4, 128, False, True),
)


def _spin() -> None:
    while True:
        pass


@contextmanager
def neighbour(busy: bool) -> Iterator[None]:
    """One process spinning on a core while the block runs, when ``busy``."""
    if not busy:
        yield
        return
    spinner = multiprocessing.Process(target=_spin, daemon=True)
    spinner.start()
    try:
        yield
    finally:
        spinner.kill()
        spinner.join()


def one_run(case: Case, tool: bool, parent: Path) -> dict[str, float]:
    """One ``benchfs run`` of ``case``, built-in or IOR: MiB/s per phase."""
    target = Path(tempfile.mkdtemp(prefix="loadgen-", dir=parent))
    size = f"{case.block_mib}m"
    args = [
        "--set", "cluster.local_nodes=1",
        "--set", f"workload.target=posix:{target}",
        "--set", f"workload.tasks_per_node={case.ranks}",
        "--set", "workload.stonewall_s=0",
        "--set", "preflight.enabled=false",
        "--set", "history.enabled=false",
        "--transfer-size", "1m", "--block-size", size,
    ]  # fmt: skip
    if tool:
        ior = ["-a", "POSIX", "-w", "-r", "-F", "-C", "-t", "1m", "-b", size]
        args += ["--set", "workload.tool=ior", "--set", f"workload.tool_args={','.join(ior)}"]
    what = f"{case.name} ({'IOR' if tool else 'built-in'})"
    try:
        with finished_run(args, what, "benchfs-loadgen-results-") as run_dir:
            summary = workload_summary(run_dir)
        return {p["phase"]: p["bwMeanMIB"] for p in summary["phases"] if p["phase"] in PHASES}
    finally:
        shutil.rmtree(target, ignore_errors=True)


def run_case(case: Case, rounds: int, disk_dir: Path) -> dict[str, Any]:
    parent = Path("/dev/shm") if case.tmpfs else disk_dir
    warm_up = one_run(case, False, parent)
    print(f"{case.name}, warm-up (untimed): {warm_up['write']:,.0f} / {warm_up['read']:,.0f} "
          "MiB/s write / read", file=sys.stderr)  # fmt: skip
    rows: list[dict[str, Any]] = []
    for index in range(rounds):
        order = (False, True) if index % 2 == 0 else (True, False)
        load = os.getloadavg()[0]
        with neighbour(case.busy):
            done = {tool: one_run(case, tool, parent) for tool in order}
        rows.append({"load_1min": load, "builtin": done[False], "ior": done[True]})
        figures = ", ".join(
            f"{phase} {done[False][phase]:,.0f} / {done[True][phase]:,.0f} MiB/s"
            for phase in PHASES
        )
        print(f"{case.name}, round {index + 1}: {figures} (built-in / IOR; load {load:.1f})",
              file=sys.stderr)  # fmt: skip
    ratios = {
        phase: [row["builtin"][phase] / row["ior"][phase] for row in rows] for phase in PHASES
    }
    return {
        "case": case.name,
        "ranks": case.ranks,
        "block_mib": case.block_mib,
        "target": "tmpfs" if case.tmpfs else f"page cache ({disk_dir})",
        "busy_neighbour": case.busy,
        "warm_up": warm_up,
        "rounds": rows,
        "ratio": {
            phase: {"median": statistics.median(r), "min": min(r), "max": max(r)}
            for phase, r in ratios.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--disk-dir", type=Path, default=Path(tempfile.gettempdir()),
                        help="where the page-cache cases write (a disk, not tmpfs)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="every round's figures on stdout")
    options = parser.parse_args()
    with free_page_reporting_paused() as reporting:
        found = [run_case(case, options.rounds, options.disk_dir) for case in CASES]
    if options.json:
        out = {"rounds": options.rounds, "free_page_reporting": reporting, "cases": found}
        print(json.dumps(out, indent=2))
        return
    print(f"free page reporting: {reporting}")
    print("| case | write, built-in / IOR | read, built-in / IOR |\n|---|---|---|")
    for result in found:
        cells = [
            f"{r['median']:.3f} ({r['min']:.2f}-{r['max']:.2f})"
            for r in (result["ratio"][phase] for phase in PHASES)
        ]
        print(f"| {result['case']} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
