"""`benchfs run --interface mount` across two hosts through the real mpirun
launcher: each host a network namespace entered with nsenter (so, as on a
real host, the ranks see the mount made there), the mounts started as one
launcher job, a rank per host, each in its host's namespace, UCX over tcp."""

from __future__ import annotations

from pathlib import Path

import pytest
from launchers.netns_hosts import NamespaceHosts, namespace_inode
from run_helpers import ROOT_ENV, NamespaceWatcher, manifest, needs_mount, scratch_dirs, summary

from benchfs.cluster.hostfile import format_hostfile
from benchfs.config import apply_overrides, load_config
from benchfs.mount.cleanup import mounts_under
from benchfs.run.orchestrate import run_plan

MiB = 1 << 20


@needs_mount
@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_namespace_hosts_mount_through_mpirun_and_unmount(
    two_hosts_sharing_mounts: NamespaceHosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in ROOT_ENV.items():
        monkeypatch.setenv(key, value)
    hosts = two_hosts_sharing_mounts.hosts
    hostfile = tmp_path / "hosts"
    hostfile.write_text(format_hostfile(hosts))
    results = tmp_path / "results"
    plan = apply_overrides(
        load_config(None),
        {
            **two_hosts_sharing_mounts.run_settings(tmp_path / "data"),
            "workload.interface": "mount",
            "workload.transfer_size": "64k",
            "workload.block_size": "1m",
            "workload.stonewall_s": 0,
            "workload.tasks_per_node": 2,
            "workload.verify": True,
            "preflight.enabled": False,
            "output.results_dir": str(results),
        },
    )
    kinds = {"mounts": ("mounts-p0/*.json", "node"), "ranks": ("p0/ranks/*.json", "rank")}
    with NamespaceWatcher(results, kinds) as watcher:
        (point,) = run_plan(plan, nodes_spec=str(hostfile))

    expected = {host.name: f"net:[{namespace_inode(host.name)}]" for host in hosts}
    assert watcher.seen["mounts"] == expected  # each host's mount served from its own namespace
    ranks = watcher.seen["ranks"]
    assert ranks == {str(rank): expected[hosts[rank // 2].name] for rank in range(4)}
    assert point.status == "completed"
    document = summary(point.run_dir)
    assert document["parameters"]["interface"] == "mount"
    write, read = document["phases"]
    assert write["bytes"] == read["bytes"] == 4 * MiB
    assert read["verify_errors"] == 0  # each rank read what a rank on the other host wrote
    recorded = manifest(point.run_dir)
    assert recorded["interface"] == "mount"
    assert sorted(recorded["mount"]["nodes"]) == sorted(expected)
    assert (point.run_dir / "logs" / "mounts" / "mounts-mpirun.log").is_file()
    assert mounts_under(tmp_path) == []
    assert scratch_dirs(results) == []
    data = tmp_path / "data"
    assert not data.exists() or list(data.iterdir()) == []
