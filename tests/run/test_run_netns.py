"""`benchfs run` across three hosts through the real mpirun launcher: each
host a network namespace, daemons and ranks started inside them by mpirun's
remote agent, UCX over tcp between them, as on a cluster."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from launchers.netns_hosts import NamespaceHosts, namespace_inode
from run_helpers import ROOT_ENV, manifest, scratch_dirs, summary

from benchfs.cluster.hostfile import format_hostfile
from benchfs.config import apply_overrides, load_config
from benchfs.run.orchestrate import run_plan

MiB = 1 << 20


def _netns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


class Watcher(threading.Thread):
    """Notes the network namespace of every daemon and rank while they run."""

    def __init__(self, results: Path) -> None:
        super().__init__(daemon=True)
        self.results = results
        self.daemons: dict[str, str] = {}
        self.ranks: dict[str, str] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.05):
            for scratch in scratch_dirs(self.results):
                self._note(scratch.glob("g*/registry/*.json"), "node_name", self.daemons)
                self._note(scratch.glob("p*/ranks/*.json"), "rank", self.ranks)

    @staticmethod
    def _note(paths: object, key: str, into: dict[str, str]) -> None:
        for path in paths:  # type: ignore[attr-defined]
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            namespace = _netns(int(record["pid"]))
            if namespace is not None:
                into.setdefault(str(record[key]), namespace)


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_three_namespace_hosts_through_mpirun_over_tcp(
    three_namespace_hosts: NamespaceHosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in ROOT_ENV.items():
        monkeypatch.setenv(key, value)
    hosts = three_namespace_hosts.hosts
    hostfile = tmp_path / "hosts"
    hostfile.write_text(format_hostfile(hosts))
    results = tmp_path / "results"
    plan = apply_overrides(
        load_config(None),
        {
            "launcher.name": "mpirun",
            "launcher.mca": three_namespace_hosts.mca(),
            "cluster.transport": "tcp",
            "cluster.data_dir": str(tmp_path / "data"),
            "cluster.chunk_size": "256k",
            "cluster.buffer_pool_size": "16m",
            "cluster.deadlines.shutdown_s": 5,
            "workload.transfer_size": "64k",
            "workload.block_size": "1m",
            "workload.stonewall_s": 0,
            "workload.tasks_per_node": 2,
            "workload.verify": True,
            "preflight.enabled": False,
            "output.results_dir": str(results),
        },
    )
    watcher = Watcher(results)
    watcher.start()
    try:
        (point,) = run_plan(plan, nodes_spec=str(hostfile))
    finally:
        watcher.stop.set()
        watcher.join()

    expected = {host.name: f"net:[{namespace_inode(host.name)}]" for host in hosts}
    assert watcher.daemons == expected
    assert watcher.ranks == {str(rank): expected[hosts[rank // 2].name] for rank in range(6)}
    assert point.status == "completed"
    write, read = summary(point.run_dir)["phases"]
    assert write["bytes"] == read["bytes"] == 6 * MiB
    assert read["verify_errors"] == 0
    recorded = manifest(point.run_dir)
    assert recorded["ranks"]["launcher"] == "mpirun"
    assert recorded["ranks"]["per_host"] == {host.name: 2 for host in hosts}
    assert [d["node_name"] for d in recorded["daemons"]] == [host.name for host in hosts]
    # Stopped gracefully through the launcher: each daemon drained and said so.
    log = (point.run_dir / "logs" / "daemons" / "daemons-mpirun.log").read_text()
    assert log.count("stopped (SIGTERM") == 3, log
    assert scratch_dirs(results) == []
    data = tmp_path / "data"
    assert not data.exists() or list(data.iterdir()) == []
