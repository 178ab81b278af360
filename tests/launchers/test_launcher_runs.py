"""Launchers start real processes: local, mpirun on this machine, and mpirun
across network-namespace hosts (one process per host)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from netns_hosts import NamespaceHosts, namespace_inode

from benchfs.cluster.hostfile import Host
from benchfs.launchers import get_launcher

needs_mpirun = pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not installed")

# Each rank writes one file (stdout of several ranks may interleave).
REPORT = (
    "import os, socket, sys; rank = os.environ.get('OMPI_COMM_WORLD_RANK', '-');"
    "open(os.path.join(sys.argv[1], 'rank-' + rank), 'w').write("
    "' '.join([rank, socket.gethostname(), os.readlink('/proc/self/ns/net'),"
    " os.environ.get('BENCHFS_PROBE', '')]))"
)


def run(command: list[str]) -> None:
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, f"{command} failed: {done.stderr}"


def reports(directory: Path) -> dict[str, list[str]]:
    return {path.name: path.read_text().split(" ") for path in sorted(directory.iterdir())}


def own_netns() -> str:
    return os.readlink("/proc/self/ns/net")


def test_local_command_runs_with_env(tmp_path: Path) -> None:
    command = get_launcher("local").command(
        Host("local0"), [sys.executable, "-c", REPORT, str(tmp_path)], env={"BENCHFS_PROBE": "42"}
    )
    run(command)
    assert reports(tmp_path) == {"rank--": ["-", os.uname().nodename, own_netns(), "42"]}


@needs_mpirun
def test_local_ranks_start_four_real_ranks(tmp_path: Path) -> None:
    hosts = [Host("local0"), Host("local1")]
    command = get_launcher("local").ranks_command(
        hosts, 2, [sys.executable, "-c", REPORT, str(tmp_path)], env={"BENCHFS_PROBE": "p"}
    )
    run(command)
    found = reports(tmp_path)
    assert sorted(found) == ["rank-0", "rank-1", "rank-2", "rank-3"]
    assert all(row[1:] == [os.uname().nodename, own_netns(), "p"] for row in found.values())


@needs_mpirun
def test_mpirun_ranks_on_localhost_slots(tmp_path: Path) -> None:
    command = get_launcher("mpirun").ranks_command(
        [Host("localhost", 4)], None, [sys.executable, "-c", REPORT, str(tmp_path)]
    )
    run(command)
    assert sorted(reports(tmp_path)) == ["rank-0", "rank-1", "rank-2", "rank-3"]


@pytest.mark.root
def test_mpirun_one_process_per_namespace_host(
    namespace_hosts: NamespaceHosts, tmp_path: Path
) -> None:
    launcher = get_launcher("mpirun", mca=namespace_hosts.mca())
    hosts = namespace_hosts.hosts
    expected = [f"net:[{namespace_inode(host.name)}]" for host in hosts]

    command = launcher.ranks_command(
        hosts, 1, [sys.executable, "-c", REPORT, str(tmp_path)], env={"BENCHFS_PROBE": "x"}
    )
    run(command)
    found = reports(tmp_path)
    assert [found[f"rank-{rank}"][2:] for rank in range(len(hosts))] == [
        [namespace, "x"] for namespace in expected
    ]

    for host, namespace in zip(hosts, expected, strict=True):  # one process on one host
        directory = tmp_path / host.name
        directory.mkdir()
        run(launcher.command(host, [sys.executable, "-c", REPORT, str(directory)]))
        assert reports(directory)["rank-0"][2] == namespace
