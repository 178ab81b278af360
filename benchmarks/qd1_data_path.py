#!/usr/bin/env python3
"""Where a queue-depth-1 transfer's time goes through BenchFS, beside the
same transfer on ``posix:``, from the results of ``benchfs bench cluster
--queue-depth 1`` (its run and ``posix:`` results directories).

Each of the run's RPCs of one operation is matched with the chunk store
operation it caused: the ``storage_op`` record on the RPC's target daemon
that lies inside the client's span (``rpc_client``: issue to reply), the
one that fills most of it (at queue depth 1 a rank has one RPC out; up to
every rank's can be at one daemon). The span splits into

- issue -> store: the request reaching the daemon, the daemon waking, a
  write's data received (UCX's copy), the hand-over to the store's ring
  thread;
- store queue: from the store taking the request to its SQE (the ring
  thread waking);
- disk op: SQE to CQE, the kernel's part (for a write that extends its
  file, io_uring's hand-off to a worker thread included);
- CQE -> client: the result back to the event loop, the reply, the
  client waking (for a read, the data's copy to the client).

Beside it, per round, the ``posix:`` side's per-transfer latency (one
``pwrite``/``pread``, the same ranks) from its summary. Rounds are paired
by their index (``-r<N>`` in the label), as ``bench cluster`` ran them.

Usage: .venv/bin/python benchmarks/qd1_data_path.py RESULTS_DIR [--op write|read] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from analysis.loaders.traces import load_traces

PARTS = ("issue -> store", "store queue", "disk op", "CQE -> client", "client total")


def critical_path(run_dir: Path, op: str) -> np.ndarray:
    """One row per matched RPC, the columns of PARTS, in microseconds."""
    traces = load_traces(sorted((run_dir / "traces").glob("*.bftrace")))
    client = traces.kind("rpc_client")
    store = traces.kind("storage_op")
    client = client[client.op == op]
    store = store[store.op == op]
    by_node: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for node, g in store.groupby("node", observed=True):
        done = g.time_ns.to_numpy(np.int64)
        latency = g.latency_ns.to_numpy(np.int64)
        queued = g.queue_ns.to_numpy(np.int64)
        by_node[str(node)] = (done - latency - queued, done - latency, done)
    rows = []
    ends = client.time_ns.to_numpy(np.int64)
    totals = client.total_ns.to_numpy(np.int64)
    for end, total, peer in zip(ends, totals, client.peer.astype(str), strict=True):
        if peer not in by_node:
            continue
        issue = end - total
        arrived, submitted, done = by_node[peer]
        inside = np.flatnonzero((arrived >= issue) & (done <= end))
        if len(inside) == 0:
            continue
        i = inside[np.argmin((arrived[inside] - issue) + (end - done[inside]))]
        rows.append(
            (arrived[i] - issue, submitted[i] - arrived[i], done[i] - submitted[i],
             end - done[i], end - issue)
        )  # fmt: skip
    return np.asarray(rows, dtype=float).reshape(-1, len(PARTS)) / 1e3


def posix_latency(posix_dir: Path, op: str) -> dict[str, float]:
    summary = json.loads((posix_dir / "workload" / "summary.json").read_text())
    (phase,) = [p for p in summary["phases"] if p["phase"] == op]
    return {"mean_us": phase["mean_us"], "p50_us": phase["p50_us"], "MiBps": phase["bwMeanMIB"]}


def run_bandwidth(run_dir: Path, op: str) -> float:
    summary = json.loads((run_dir / "workload" / "summary.json").read_text())
    (phase,) = [p for p in summary["phases"] if p["phase"] == op]
    return float(phase["bwMeanMIB"])


def rounds(results: Path) -> dict[int, dict[str, Path]]:
    """Results directories of a bench cluster run by round and side."""
    found: dict[int, dict[str, Path]] = {}
    for d in sorted(results.iterdir()):
        m = re.search(r"bench-cluster-(run|posix)-r(\d+)$", d.name)
        if m and (d / "workload" / "summary.json").is_file():
            found.setdefault(int(m.group(2)), {})[m.group(1)] = d
    return {k: v for k, v in sorted(found.items()) if {"run", "posix"} <= v.keys()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("results", type=Path, help="--results-dir of benchfs bench cluster")
    p.add_argument("--op", choices=("write", "read"), default="write")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    per_round: list[dict[str, Any]] = []
    for index, sides in rounds(args.results).items():
        path = critical_path(sides["run"], args.op)
        if len(path) == 0:
            continue
        posix = posix_latency(sides["posix"], args.op)
        per_round.append({
            "round": index,
            "matched": len(path),
            "mean_us": dict(zip(PARTS, path.mean(axis=0).round(1).tolist(), strict=True)),
            "p50_us": dict(zip(PARTS, np.median(path, axis=0).round(1).tolist(), strict=True)),
            "posix": posix,
            "run_MiBps": run_bandwidth(sides["run"], args.op),
        })  # fmt: skip
    if not per_round:
        raise SystemExit(f"{args.results}: no round with both a run and a posix: side")
    medians = {
        stat: {part: statistics.median(r[stat][part] for r in per_round) for part in PARTS}
        for stat in ("mean_us", "p50_us")
    }
    posix_med = {
        k: statistics.median(r["posix"][k] for r in per_round) for k in per_round[0]["posix"]
    }
    report = {"op": args.op, "rounds": per_round, "medians": medians, "posix_medians": posix_med}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    total = medians["mean_us"]["client total"]
    print(f"{args.op}, {len(per_round)} rounds; per round the mean and p50 of each part, "
          "then the median over rounds (us):")  # fmt: skip
    for part in PARTS:
        mean, p50 = medians["mean_us"][part], medians["p50_us"][part]
        print(f"  {part:15s} mean {mean:7.0f}  p50 {p50:7.0f}  ({mean / total:5.1%} of the mean)")
    print(
        f"  posix: one {args.op}: mean {posix_med['mean_us']:7.0f}  p50 {posix_med['p50_us']:7.0f}"
    )


if __name__ == "__main__":
    main()
