"""How a whole `benchfs run` across hosts grows with its number of hosts.

For each count k, a tiny `benchfs run` on the first k hosts (through the
configured launcher: mpirun or srun, one daemon and ``ranks_per_host``
ranks a host) is timed step by step from the run's own step messages
(``RunObserver.step``) and its records:

- ``spawn_s``: the launcher job starting the k daemons (up to "waiting");
- ``registration_s``: until all k daemons are in the registry;
- ``members_file_s``: writing the one members file (the manifest's
  ``membership.write_s``);
- ``rank_spawn_s``: the launcher starting the k x ranks_per_host ranks,
  until the first of them begins to connect (``workload/connect.jsonl``);
- ``connect_all_s``: from the first rank beginning to connect until the
  last one has: each reads the members file and opens a session with every
  daemon (the ranks' own times, ``workload/connect.jsonl``);
- ``first_rpc_s``: the slowest rank's first RPCs, the first phase's open of
  its file (``open_s`` of ``workload/ranks.jsonl``; inside ``phase_s`` too);
- ``phase_s``: the phases (write and read) as the summary times them;
- ``collection_s``: gathering the ranks' rows into the summary;
- ``stop_s``: stopping the daemons;
- ``report_s``: writing report.md and report.html.

Every step is taken from the run's step messages and the files it wrote,
never from its live progress, which a short phase may end before showing.

Growth is the exponent k of t ~ N**k (``benchfs.bench.scale.fit``); a step
that all hosts do in parallel stays flat, one that loops over hosts is
linear. On one machine the hosts share its cores: the exponents are what to
read, the absolute times are upper bounds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.jsonlines import read_json_lines
from analysis.layout import RunLayout
from benchfs.bench.scale import Growth, fit
from benchfs.cluster.hostfile import Host, format_hostfile
from benchfs.config.plan import apply_overrides, load_config
from benchfs.errors import ToolError
from benchfs.run.observer import RunObserver

HOST_STEPS = (
    "spawn_s",
    "registration_s",
    "members_file_s",
    "rank_spawn_s",
    "connect_all_s",
    "first_rpc_s",
    "phase_s",
    "collection_s",
    "stop_s",
    "report_s",
)
# Tiny: the steps around the phase are what is measured, not the disk.
WORKLOAD = {
    "workload.transfer_size": "64k",
    "workload.block_size": "128k",
    "workload.stonewall_s": 0,
    "cluster.buffer_pool_size": "4m",
    "preflight.enabled": False,
}


class _RunClock(RunObserver):
    """Wall-clock times of a run's steps, by their first word."""

    def __init__(self, on_progress: Callable[[str], None]) -> None:
        self.on_progress = on_progress
        self.marks: dict[str, float] = {}

    def step(self, message: str) -> None:
        self.marks.setdefault(message.split(" ", 1)[0], time.time())
        self.on_progress(message)


@dataclass(frozen=True)
class HostRow:
    hosts: int
    ranks: int
    seconds: dict[str, float]


def _rank_steps(layout: RunLayout) -> dict[str, float]:
    """From the ranks' own records: when the first began and the last ended
    connecting, and the slowest first open of the first phase (unix seconds
    and seconds)."""
    connects = read_json_lines(layout.connects)
    rows = read_json_lines(layout.ranks)
    first = [r for r in rows if r["phase"] == rows[0]["phase"] and r["repetition"] == 0]
    return {
        "connect_start": min(r["start_unix_ns"] for r in connects) / 1e9,
        "connect_end": max(r["end_unix_ns"] for r in connects) / 1e9,
        "first_rpc_s": max(float(r["open_s"]) for r in first),
    }


def _phase_seconds(summary: Mapping[str, Any]) -> float:
    """The phases' time: until each one's last rank was done, summed."""
    return float(sum(phase.get("last_done_s", 0.0) for phase in summary.get("phases", [])))


def measure_hosts(
    hosts: Sequence[Host],
    ranks_per_host: int,
    settings: Mapping[str, object],
    directory: Path,
    env: Mapping[str, str],
    on_progress: Callable[[str], None],
    config_path: Path | None = None,
) -> HostRow:
    """One tiny run on ``hosts``, timed step by step."""
    from benchfs.run.orchestrate import run_plan

    hostfile = directory / f"hosts-{len(hosts)}"
    hostfile.write_text(format_hostfile(hosts))
    results = directory / f"results-{len(hosts)}"
    plan = apply_overrides(
        load_config(config_path),
        {
            **WORKLOAD,
            **settings,
            "workload.tasks_per_node": ranks_per_host,
            "output.results_dir": str(results),
        },
    )
    clock = _RunClock(on_progress)
    (point,) = run_plan(plan, nodes_spec=str(hostfile), observer=clock, env=env)
    ended = time.time()
    if point.status != "completed" or point.summary is None:
        raise ToolError(f"the run on {len(hosts)} hosts did not complete: {point.error}")
    marks = clock.marks
    layout = RunLayout(point.run_dir)
    membership = json.loads(layout.manifest.read_text())["membership"]
    ranks = _rank_steps(layout)
    seconds = {
        "spawn_s": marks["waiting"] - marks["starting"],
        "registration_s": marks["publishing"] - marks["waiting"],
        "members_file_s": float(membership["write_s"]),
        "rank_spawn_s": ranks["connect_start"] - marks["running"],
        "connect_all_s": ranks["connect_end"] - ranks["connect_start"],
        "first_rpc_s": ranks["first_rpc_s"],
        "phase_s": _phase_seconds(point.summary),
        "collection_s": marks["stopping"] - marks["summarising"],
        "stop_s": marks["writing"] - marks["stopping"],
        "report_s": ended - marks["writing"],
    }
    return HostRow(len(hosts), len(hosts) * ranks_per_host, seconds)


@dataclass(frozen=True)
class HostScaleReport:
    rows: list[HostRow]
    growth: list[Growth]
    ranks_per_host: int

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": [
                {
                    "hosts": r.hosts,
                    "ranks": r.ranks,
                    **{k: round(v, 4) for k, v in r.seconds.items()},
                }
                for r in self.rows
            ],
            "growth": [
                {"step": g.step, "exponent": g.exponent, "at_1024_hosts_s": round(g.at_target_s, 2)}
                for g in self.growth
            ],
            "ranks_per_host": self.ranks_per_host,
        }


def run_hosts_scale_bench(
    hosts: Sequence[Host],
    counts: Sequence[int],
    *,
    ranks_per_host: int = 4,
    settings: Mapping[str, object],
    directory: Path,
    env: Mapping[str, str],
    on_progress: Callable[[str], None] = lambda _: None,
    config_path: Path | None = None,
) -> HostScaleReport:
    """A tiny run on the first k hosts for each k of ``counts``, smallest first."""
    wanted = sorted(set(counts))
    if not wanted or wanted[0] < 1 or wanted[-1] > len(hosts):
        raise ToolError(f"--hosts {counts}: each count must be 1 to the {len(hosts)} hosts given")
    rows = []
    for k in wanted:
        on_progress(f"{k} hosts")
        rows.append(
            measure_hosts(
                hosts[:k], ranks_per_host, settings, directory, env, on_progress, config_path
            )
        )
    growth = [fit([(r.hosts, r.seconds[step]) for r in rows], step) for step in HOST_STEPS]
    return HostScaleReport(rows, growth, ranks_per_host)
