#!/usr/bin/env python3
"""Thread wake-ups per transfer in a queue-depth-1 write phase, through
BenchFS and on ``posix:``, from the scheduler's own events.

Each side runs ``benchfs run`` with ``benchfs bench cluster``'s workload
(4 daemons, one rank each, file per process, 1 MiB transfers, queue depth
1, O_DIRECT) but a write phase alone and larger, so that it lasts several
seconds (``--block-size``, 2 GiB per rank by default). A second after
the ranks start, ``perf sched record`` captures every CPU for
``--capture-s``; the run's processes are the descendants of its ``benchfs
run`` (daemons and ranks). Per thread kind of those processes (the rank,
the daemon's event loop, which turns its store's ring, io_uring's
io-wq workers, a store's ring thread in builds before 2026-11-26, ...):
wake-ups per transfer and the mean delay from a wake-up to running on a
CPU. Transfers in the capture are estimated from the phase's
rate (its summary) times the capture's length. The sides alternate,
``--rounds`` each. Needs ``perf`` and the rights to record scheduler
events (root or ``perf_event_paranoid`` <= -1).

Usage: .venv/bin/python benchmarks/qd1_wakeups.py [--rounds 2] [--block-size 2g] [--dir D]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LINE = re.compile(r"\s*(.+?)\s+(\d+)/(\d+)\s+([\d.]+):\s+(\S+):\s+(.*)")
WOKEN = re.compile(r"comm=(.+?) pid=(\d+)")
NEXT = re.compile(r"next_comm=(.+?) next_pid=(\d+)")


def descendants(root: int) -> dict[int, str]:
    """Every live descendant of ``root``: pid -> command line."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    cmdlines: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children[ppid].append(int(entry.name))
        cmdlines[int(entry.name)] = cmd
    found: dict[int, str] = {}
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found[child] = cmdlines.get(child, "")
            todo.append(child)
    return found


def written(data: Path) -> bool:
    """Whether the write phase has begun: a file of it under ``data`` holds
    bytes (a daemon's backing file of a data object, ``@...``; a ``posix:``
    rank's ``testfile...``)."""
    for path in [*data.rglob("@*"), *data.rglob("testfile*")]:
        try:
            if path.is_file() and path.stat().st_size > 0:
                return True
        except OSError:
            continue
    return False


def run_side(side: str, root: Path, args: argparse.Namespace) -> dict[str, object]:
    work = root / side
    shutil.rmtree(work, ignore_errors=True)
    (work / "data").mkdir(parents=True, mode=0o700)
    (work / "state").mkdir(mode=0o700)
    sets = {
        "cluster.local_nodes": "4",
        "workload.tasks_per_node": "1",
        "workload.stonewall_s": "0",
        "workload.phases": "write",
        "preflight.enabled": "false",
        "output.results_dir": str(work / "results"),
        "output.label": f"wakeups-{side}",
        "cluster.data_dir": str(work / ("state" if side == "posix" else "data")),
    }
    if side == "posix":
        sets |= {"workload.target": f"posix:{work / 'data'}", "workload.direct": "true"}
    cmd = [
        sys.executable, "-m", "benchfs", "run", "--queue-depth", "1", "--transfer-size", "1m",
        "--block-size", args.block_size, "--api", "file-per-process",
    ]  # fmt: skip
    for key, value in sets.items():
        cmd += ["--set", f"{key}={value}"]
    capture = work / "sched.data"
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as run:
        deadline = time.monotonic() + 120
        while not written(work / "data") and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.05)
        time.sleep(0.3)  # past the phase's first transfers
        procs = descendants(run.pid)
        subprocess.run(
            ["perf", "sched", "record", "-o", str(capture), "--", "sleep", str(args.capture_s)],
            check=True, capture_output=True,
        )  # fmt: skip
        _, err = run.communicate(timeout=1800)
        if run.returncode != 0:
            raise SystemExit(f"benchfs run ({side}) failed: {err.strip()[-500:]}")
    (results,) = (work / "results").glob(f"*-wakeups-{side}")
    summary = json.loads((results / "workload" / "summary.json").read_text())
    (phase,) = summary["phases"]
    rate = phase["ops"] / phase["MeanTime"]
    daemons = {p for p, c in procs.items() if "benchfs.node.daemon" in c}
    ranks_set = {p for p, c in procs.items() if "benchfs.node.rank" in c}
    report = wakeups(capture, daemons, ranks_set, rate)
    report["MiBps"] = phase["bwMeanMIB"]
    report["load_average"] = list(os.getloadavg())
    return report


def kind_of(comm: str, main: bool, rank: bool) -> str:
    name = re.sub(r"[-_]?\d+$", "", comm)
    if rank:
        return "rank" if main else f"rank thread {name}"
    if main:
        return "daemon event loop"
    return {"benchfs-store": "daemon store ring thread", "iou-wrk": "daemon io-wq worker"}.get(
        name, f"daemon {name}"
    )


def wakeups(capture: Path, daemons: set[int], ranks: set[int], rate: float) -> dict[str, object]:
    text = subprocess.run(
        ["perf", "script", "-i", str(capture), "-F", "pid,tid,comm,time,event,trace"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    events = []
    tgid: dict[str, int] = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            _, pid, tid, t, event, rest = m.groups()
            tgid[tid] = int(pid)
            events.append((float(t), event, rest))
    if not events:
        raise SystemExit(f"{capture}: no scheduler events")
    span = events[-1][0] - events[0][0]
    pending: dict[str, tuple[float, str]] = {}
    delays: dict[str, list[float]] = collections.defaultdict(list)
    ours = daemons | ranks
    for t, event, rest in events:
        if event in ("sched:sched_waking", "sched:sched_wakeup"):
            w = WOKEN.search(rest)
            if w and tgid.get(w.group(2)) in ours:
                pending.setdefault(w.group(2), (t, w.group(1)))
        elif event == "sched:sched_switch":
            n = NEXT.search(rest)
            if n and n.group(2) in pending:
                t0, comm = pending.pop(n.group(2))
                owner = tgid[n.group(2)]
                kind = kind_of(comm, int(n.group(2)) == owner, owner in ranks)
                delays[kind].append(t - t0)
    transfers = rate * span
    kinds = {
        kind: {
            "per_transfer": round(len(d) / transfers, 2),
            "mean_delay_us": round(1e6 * statistics.fmean(d), 1),
        }
        for kind, d in sorted(delays.items(), key=lambda kv: -len(kv[1]))
    }
    total = sum(len(d) for d in delays.values())
    return {
        "capture_s": round(span, 3),
        "transfers": round(transfers),
        "per_transfer": round(total / transfers, 2),
        "kinds": kinds,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--block-size", default="2g", help="bytes per rank")
    p.add_argument("--capture-s", type=float, default=1.0)
    p.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = p.parse_args()
    if shutil.which("perf") is None:
        raise SystemExit("perf is not on PATH")
    root = Path(tempfile.mkdtemp(prefix="qd1-wakeups-", dir=args.dir))
    rounds = []
    try:
        for i in range(args.rounds):
            order = ("benchfs", "posix") if i % 2 == 0 else ("posix", "benchfs")
            rounds.append({side: run_side(side, root, args) for side in order})
            for side in order:
                r = rounds[-1][side]
                print(f"round {i + 1} {side}: {r['per_transfer']} wake-ups per transfer, "
                      f"{r['MiBps']:.0f} MiB/s", file=sys.stderr)  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps({"block_size": args.block_size, "rounds": rounds}, indent=2))


if __name__ == "__main__":
    main()
