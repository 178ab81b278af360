#!/usr/bin/env python3
"""Healthy runs under the live view: its alerts and flagged nodes, and what it
costs, in alternating runs of ``benchfs run`` with the view on and off.

Each round is two runs of the main job on the embedded local cluster (the
defaults: 4 daemons, 4 ranks, preflight, 15 s stonewalled phases), one with
the live view on (``live.interval_s = 1``, the default) and one with it off
(``= 0``), the order swapped every other round so that both meet the same
stretch of a shared machine. On a machine where nothing is wrong, every
alert and every node a verdict calls slow is a false one. Per run: its
alerts (the manifest's ``live.alerts``), the nodes its verdicts call slow,
its write and read bandwidth and the load average (1 min) at its start; at
the end, the runs with an alert or a flagged node out of all live-on runs,
and per phase the median of the rounds' on/off bandwidth ratios with their
range (the cost: 1.00 is none). Each run's results directory is removed once
read; ``--json`` keeps every figure.

Usage:
  .venv/bin/python benchmarks/live_view_runs.py [--rounds 20] [--json]
      [-- EXTRA_BENCHFS_RUN_ARGS...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any

from benchfs_runs import finished_run, workload_summary

PHASES = ("write", "read")


def one_run(live: bool, extra: list[str]) -> dict[str, Any]:
    """One ``benchfs run``, live view on or off: its figures."""
    load = os.getloadavg()[0]
    args = ["--set", f"live.interval_s={1.0 if live else 0.0}", *extra]
    what = f"benchfs run (live {'on' if live else 'off'})"
    with finished_run(args, what, "benchfs-live-view-") as run_dir:
        summary = workload_summary(run_dir)
        manifest = json.loads((run_dir / "manifest.json").read_text())
        bandwidth = {p["phase"]: p["bwMeanMIB"] for p in summary["phases"] if p["phase"] in PHASES}
        alerts = (manifest.get("live") or {}).get("alerts") or []
        # Absent where the view judged nothing (off, or no reading in a phase).
        verdicts_file = run_dir / "verdicts.json"
        verdicts = (
            json.loads(verdicts_file.read_text())["verdicts"] if verdicts_file.exists() else []
        )
    flagged = sorted({v["node"] for v in verdicts if v["status"] != "ok"})
    return {
        "live": live,
        "load_1min": load,
        "bandwidth_mib_s": bandwidth,
        "alerts": [f"{a['node']} {a['phase']}: {a.get('message', '')}" for a in alerts],
        "flagged": flagged,
        "verdicts": [v["verdict"] for v in verdicts if v["status"] != "ok"],
    }


def ratio_line(pairs: list[tuple[dict[str, Any], dict[str, Any]]], phase: str) -> str:
    ratios = [on["bandwidth_mib_s"][phase] / off["bandwidth_mib_s"][phase] for on, off in pairs]
    return (
        f"| {phase} | {statistics.median(ratios):.3f} | {min(ratios):.3f} - {max(ratios):.3f} "
        f"| {len(ratios)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="every run's figures on stdout")
    parser.add_argument("extra", nargs="*", help="more `benchfs run` arguments (after --)")
    options = parser.parse_args()
    runs: list[dict[str, Any]] = []
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for round_index in range(options.rounds):
        order = (True, False) if round_index % 2 == 0 else (False, True)
        done = {live: one_run(live, options.extra) for live in order}
        for live in order:
            run = done[live]
            runs.append(run)
            figures = ", ".join(f"{k} {v:,.0f} MiB/s" for k, v in run["bandwidth_mib_s"].items())
            said = f"; alerts {run['alerts']}; flagged {run['flagged']}" if live else ""
            print(
                f"round {round_index + 1}, live {'on' if live else 'off'}: {figures} "
                f"(load {run['load_1min']:.1f}){said}",
                file=sys.stderr,
            )
        pairs.append((done[True], done[False]))
    live_runs = [run for run in runs if run["live"]]
    if options.json:
        print(json.dumps({"rounds": options.rounds, "runs": runs}, indent=2))
        return
    alerted = sum(bool(run["alerts"]) for run in live_runs)
    flagged = sum(bool(run["flagged"]) for run in live_runs)
    print(f"live-on runs: {len(live_runs)}; with an alert: {alerted}; "
          f"with a flagged node: {flagged}")  # fmt: skip
    for run in live_runs:
        for line in [*run["alerts"], *run["verdicts"]]:
            print(f"  {line}")
    print("\n| phase | on / off, median | range | rounds |\n|---|---|---|---|")
    for phase in PHASES:
        print(ratio_line(pairs, phase))


if __name__ == "__main__":
    main()
