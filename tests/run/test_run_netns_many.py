"""`benchfs run` across sixteen hosts through the real mpirun launcher: each
host a network namespace, a daemon and four ranks on each started inside
them by mpirun's remote agent, UCX over tcp between them (64 ranks, 16
daemons, 16 orted on this machine's cores); every rank learns the
membership from the one members file, one launcher job stops the daemons
and removes their data on every host, and nothing is left after.
`benchmarks/netns_scale.py` times each step at 4, 8 and 16 hosts
(docs/PERFORMANCE.md, "Start-up at 1,024 nodes")."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from launchers.netns_hosts import NamespaceHosts
from run_helpers import ROOT_ENV, manifest, scratch_dirs, summary

from analysis.jsonlines import read_json_lines
from analysis.layout import RunLayout
from benchfs.bench.scale_hosts import HOST_STEPS, run_hosts_scale_bench
from benchfs.cluster.hostfile import format_hostfile
from benchfs.config import apply_overrides, load_config
from benchfs.run.orchestrate import run_plan

KiB = 1 << 10
RANKS_PER_HOST = 4


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_sixteen_namespace_hosts_four_ranks_each_over_tcp(
    sixteen_namespace_hosts: NamespaceHosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in ROOT_ENV.items():
        monkeypatch.setenv(key, value)
    hosts = sixteen_namespace_hosts.hosts
    hostfile = tmp_path / "hosts"
    hostfile.write_text(format_hostfile(hosts))
    results = tmp_path / "results"
    plan = apply_overrides(
        load_config(None),
        {
            **sixteen_namespace_hosts.run_settings(tmp_path / "data"),
            # 64 ranks and 16 daemons on a small machine: a tiny workload.
            "cluster.buffer_pool_size": "4m",
            "workload.transfer_size": "64k",
            "workload.block_size": "128k",
            "workload.stonewall_s": 0,
            "workload.tasks_per_node": RANKS_PER_HOST,
            "workload.verify": True,
            "output.results_dir": str(results),
        },
    )
    (point,) = run_plan(plan, nodes_spec=str(hostfile))

    assert point.status == "completed"
    ranks = len(hosts) * RANKS_PER_HOST
    # Every rank moved its block in both phases (a short one named, not summed away).
    rows = read_json_lines(RunLayout(point.run_dir).ranks)
    short = [
        (row["phase"], row["rank"], row["host"], row["bytes"], row["errors"])
        for row in rows
        if row["bytes"] != 128 * KiB
    ]
    assert short == [], short
    assert sorted((row["phase"], row["rank"]) for row in rows) == sorted(
        (phase, rank) for phase in ("read", "write") for rank in range(ranks)
    )
    write, read = summary(point.run_dir)["phases"]
    assert write["bytes"] == read["bytes"] == ranks * 128 * KiB
    assert write["numTasks"] == ranks
    assert read["verify_errors"] == 0
    recorded = manifest(point.run_dir)
    assert recorded["ranks"]["launcher"] == "mpirun"
    assert recorded["ranks"]["per_host"] == {host.name: RANKS_PER_HOST for host in hosts}
    assert [d["node_name"] for d in recorded["daemons"]] == [host.name for host in hosts]
    assert recorded["membership"]["source"] == "members file"
    assert recorded["membership"]["daemons"] == len(hosts)
    log = (point.run_dir / "logs" / "daemons" / "daemons-mpirun.log").read_text()
    assert log.count("stopped (SIGTERM") == len(hosts), log
    # Cleaned up: no scratch, no data, and no process left in any host.
    assert scratch_dirs(results) == []
    data = tmp_path / "data"
    assert not data.exists() or list(data.iterdir()) == []
    for host in hosts:
        left = subprocess.run(
            ["ip", "netns", "pids", host.name], capture_output=True, text=True, check=True
        ).stdout.split()
        assert left == [], f"{host.name} still runs {left}"


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_the_hosts_scale_bench_times_every_step(
    three_namespace_hosts: NamespaceHosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in ROOT_ENV.items():
        monkeypatch.setenv(key, value)
    report = run_hosts_scale_bench(
        three_namespace_hosts.hosts,
        [1, 3],
        ranks_per_host=2,
        settings=three_namespace_hosts.run_settings(tmp_path / "data"),
        directory=tmp_path,
        env=dict(os.environ),
    )
    assert [(row.hosts, row.ranks) for row in report.rows] == [(1, 2), (3, 6)]
    for row in report.rows:
        # Each step happened: nothing of a run starts before the one before it ends.
        assert all(row.seconds[step] > 0 for step in HOST_STEPS), row
    assert [g.step for g in report.growth] == list(HOST_STEPS)
    # The ranks' connects come from every rank's own record.
    (run_dir,) = (tmp_path / "results-3").glob("*-run")
    connects = read_json_lines(RunLayout(run_dir).connects)
    assert sorted(connect["rank"] for connect in connects) == list(range(6))
    assert scratch_dirs(tmp_path / "results-3") == []
