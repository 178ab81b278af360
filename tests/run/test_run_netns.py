"""`benchfs run` across three hosts through the real mpirun launcher: each
host a network namespace, daemons and ranks started inside them by mpirun's
remote agent, UCX over tcp between them, as on a cluster."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from launchers.netns_hosts import NamespaceHosts, namespace_inode
from run_helpers import ROOT_ENV, NamespaceWatcher, manifest, scratch_dirs, summary

from benchfs.cluster.hostfile import format_hostfile
from benchfs.config import apply_overrides, load_config
from benchfs.run.orchestrate import run_plan

MiB = 1 << 20
# In this process's environment, not a variable the nodes need: no command
# line may carry it (any user of a node can read them, /proc/PID/cmdline).
CANARY = ("BFS_TEST_PRIVATE", "not-for-command-lines-4d1f")


def record_command_lines(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every command line started from now on (the processes still start)."""
    started: list[list[str]] = []

    class Recorded(subprocess.Popen):  # type: ignore[type-arg]
        def __init__(self, args: Any, *rest: Any, **options: Any) -> None:
            started.append([str(token) for token in args])
            super().__init__(args, *rest, **options)

    monkeypatch.setattr(subprocess, "Popen", Recorded)
    return started


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("preflight", [False, True], ids=["no-preflight", "preflight"])
def test_three_namespace_hosts_through_mpirun_over_tcp(
    three_namespace_hosts: NamespaceHosts,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    preflight: bool,
) -> None:
    for key, value in ROOT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv(*CANARY)
    started = record_command_lines(monkeypatch)
    hosts = three_namespace_hosts.hosts
    hostfile = tmp_path / "hosts"
    hostfile.write_text(format_hostfile(hosts))
    results = tmp_path / "results"
    plan = apply_overrides(
        load_config(None),
        {
            **three_namespace_hosts.run_settings(tmp_path / "data"),
            "workload.transfer_size": "64k",
            "workload.block_size": "1m",
            "workload.stonewall_s": 0,
            "workload.tasks_per_node": 2,
            "workload.verify": True,
            "preflight.enabled": preflight,
            "preflight.runtime_s": 2,
            # Three hosts share one disk on a busy machine: no load may look like a sick node
            # here (finding one is tested on a throttled disk, test_run_preflight).
            "preflight.thresholds.outlier_factor": 1e6,
            "output.results_dir": str(results),
        },
    )
    kinds = {"daemons": ("g*/registry/*.json", "node_name"), "ranks": ("p*/ranks/*.json", "rank")}
    with NamespaceWatcher(results, kinds) as watcher:
        (point,) = run_plan(plan, nodes_spec=str(hostfile))

    expected = {host.name: f"net:[{namespace_inode(host.name)}]" for host in hosts}
    assert watcher.seen["daemons"] == expected
    ranks = watcher.seen["ranks"]
    assert ranks == {str(rank): expected[hosts[rank // 2].name] for rank in range(6)}
    assert point.status == "completed"
    write, read = summary(point.run_dir)["phases"]
    assert write["bytes"] == read["bytes"] == 6 * MiB
    assert read["verify_errors"] == 0
    recorded = manifest(point.run_dir)
    assert recorded["ranks"]["launcher"] == "mpirun"
    assert recorded["ranks"]["per_host"] == {host.name: 2 for host in hosts}
    assert [d["node_name"] for d in recorded["daemons"]] == [host.name for host in hosts]
    assert recorded["membership"]["source"] == "members file"
    names = [host.name for host in hosts]
    if preflight:
        # The preflight ran on every host through mpirun, each in its own namespace.
        assert recorded["preflight"]["status"] == "run", recorded["preflight"]
        assert recorded["preflight"]["kept"] == names and recorded["preflight"]["excluded"] == []
        for decision in recorded["preflight"]["decisions"]:
            assert decision["evidence"]["values"]["read_bw_MiB_s"] > 0, decision
            assert decision["evidence"]["values"]["write_bw_MiB_s"] > 0, decision
        written = sorted(path.name for path in (point.run_dir / "preflight").glob("*.json"))
        assert written == sorted(f"{name}.json" for name in names)
    else:
        assert recorded["preflight"]["status"] == "not run"
    # Stopped gracefully through the launcher: each daemon drained and said so.
    log = (point.run_dir / "logs" / "daemons" / "daemons-mpirun.log").read_text()
    assert log.count("stopped (SIGTERM") == 3, log
    # Through mpirun with the variables the nodes need (-x), and nothing else of the environment.
    assert any(argv[0] == "mpirun" and "-x" in argv for argv in started), started
    assert [argv for argv in started if any(CANARY[1] in token for token in argv)] == []
    assert scratch_dirs(results) == []
    data = tmp_path / "data"
    assert not data.exists() or list(data.iterdir()) == []
