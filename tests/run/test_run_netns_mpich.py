"""`benchfs run` across three hosts through MPICH's Hydra (the mpirun
launcher's mpich flavour): each host a network namespace, Hydra's proxies
started in them by an rsh agent instead of ssh, connecting back to mpiexec
at this machine's address on the hosts' bridge (``network_interface``, Hydra's
``-iface``); daemons, mounts and mpi4py ranks inside, UCX over tcp between
them, as on a cluster. Natively, and on the mount with a mount namespace per
host (each host's ranks see the mount made there and no other host's)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from launchers.netns_hosts import NamespaceHosts, namespace_inode
from run_helpers import (
    ROOT_ENV,
    NamespaceWatcher,
    assert_nothing_left,
    manifest,
    mount_missing,
    processes_mentioning,
    summary,
)

from benchfs.cluster.hostfile import format_hostfile
from benchfs.config import apply_overrides, load_config
from benchfs.errors import LaunchError
from benchfs.mount.cleanup import mounts_under
from benchfs.run.observer import PointResult
from benchfs.run.orchestrate import run_plan

MiB = 1 << 20
TASKS_PER_NODE = 2
HYDRA = shutil.which("mpiexec.hydra") or shutil.which("mpiexec.mpich")
pytestmark = [
    pytest.mark.root,
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        HYDRA is None, reason="needs MPICH's mpiexec.hydra or mpiexec.mpich (Debian package mpich)"
    ),
]


def run_through_hydra(
    hosts: NamespaceHosts, tmp_path: Path, interface: str
) -> tuple[PointResult, dict[str, dict[str, str]]]:
    """One verified write and read on the three hosts through Hydra; the
    namespace of every daemon (or mount) and rank, noted while it runs."""
    assert HYDRA is not None
    hostfile = tmp_path / "hosts"
    hostfile.write_text(format_hostfile(hosts.hosts))
    results = tmp_path / "results"
    plan = apply_overrides(
        load_config(None),
        {
            **hosts.run_settings(tmp_path / "data", hydra=HYDRA),
            "workload.interface": interface,
            "workload.transfer_size": "64k",
            "workload.block_size": "1m",
            "workload.stonewall_s": 0,
            "workload.tasks_per_node": TASKS_PER_NODE,
            "workload.verify": True,
            "preflight.enabled": False,
            "output.results_dir": str(results),
        },
    )
    kinds = {
        "daemons": ("g*/registry/*.json", "node_name"),
        "mounts": ("mounts-p0/*.json", "node"),
        "ranks": ("p0/ranks/*.json", "rank"),
    }
    with NamespaceWatcher(results, kinds) as watcher:
        (point,) = run_plan(plan, nodes_spec=str(hostfile))
    assert point.status == "completed", point.error
    return point, watcher.seen


def check_run(hosts: NamespaceHosts, point: PointResult, seen: dict[str, dict[str, str]]) -> None:
    """Every host ran its daemon and its ranks in its own namespace, the ranks
    formed one MPICH job, and the data written was read back intact."""
    names = [host.name for host in hosts.hosts]
    expected = {name: f"net:[{namespace_inode(name)}]" for name in names}
    assert seen["daemons"] == expected
    assert seen["ranks"] == {
        str(rank): expected[names[rank // TASKS_PER_NODE]] for rank in range(3 * TASKS_PER_NODE)
    }
    write, read = summary(point.run_dir)["phases"]
    for phase in (write, read):
        assert (phase["numTasks"], phase["bytes"], phase["errors"]) == (6, 6 * MiB, 0), phase
    assert read["verify_errors"] == 0
    recorded = manifest(point.run_dir)
    assert recorded["effective_config"]["launcher"]["flavour"] == "mpich"
    assert recorded["ranks"]["per_host"] == {name: TASKS_PER_NODE for name in names}
    assert [d["node_name"] for d in recorded["daemons"]] == names
    agent = ["-launcher", "rsh", "-launcher-exec", str(hosts.agent)]
    assert recorded["ranks"]["command"][:10] == [
        HYDRA, "-iface", hosts.bridge, *agent, "-hosts", ",".join(names), "-ppn",
    ]  # fmt: skip
    # Stopped gracefully through Hydra: each daemon drained and said so.
    log = (point.run_dir / "logs" / "daemons" / "daemons-mpirun.log").read_text()
    assert log.count("stopped (SIGTERM") == 3, log


def check_nothing_left(hosts: NamespaceHosts, point: PointResult, tmp_path: Path) -> None:
    recorded = manifest(point.run_dir)
    data_dir = Path(recorded["daemons"][0]["data_dir"])
    token = data_dir.parent.name.removeprefix("benchfs-").rsplit("-g", 1)[0]
    assert_nothing_left(tmp_path, token)
    # No mpiexec or proxy of the run's Hydra jobs: their command lines name the agent.
    assert processes_mentioning(str(hosts.agent)) == []
    data = tmp_path / "data"
    assert not data.exists() or list(data.iterdir()) == []


def test_three_namespace_hosts_through_hydra_over_tcp(
    three_namespace_hosts: NamespaceHosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in ROOT_ENV.items():
        monkeypatch.setenv(key, value)
    point, seen = run_through_hydra(three_namespace_hosts, tmp_path, "native")
    check_run(three_namespace_hosts, point, seen)
    assert seen["mounts"] == {}
    check_nothing_left(three_namespace_hosts, point, tmp_path)


def test_three_namespace_hosts_mount_through_hydra_and_unmount(
    three_hosts_with_own_mounts: NamespaceHosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mount_missing() is not None:
        pytest.skip(str(mount_missing()))
    for key, value in ROOT_ENV.items():
        monkeypatch.setenv(key, value)
    hosts = three_hosts_with_own_mounts
    point, seen = run_through_hydra(hosts, tmp_path, "mount")
    check_run(hosts, point, seen)
    # Each host's mount served from its own namespace, started as one Hydra job.
    assert seen["mounts"] == seen["daemons"]
    recorded = manifest(point.run_dir)
    assert recorded["interface"] == "mount"
    assert sorted(recorded["mount"]["nodes"]) == sorted(seen["daemons"])
    assert (point.run_dir / "logs" / "mounts" / "mounts-mpirun.log").is_file()
    assert mounts_under(tmp_path) == []
    for host in hosts.hosts:
        assert mounts_under(tmp_path, hosts.mountinfo(host)) == [], host
    check_nothing_left(hosts, point, tmp_path)


def test_without_the_hosts_interface_the_run_ends_at_what_hydra_said(
    three_namespace_hosts: NamespaceHosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Hydra's proxies cannot reach mpiexec at this machine's host name from
    # inside the namespaces, print so and exit, and mpiexec waits on. The
    # run's first job through Hydra (the check that it reaches every host)
    # ends at the proxies' line, not at a deadline, names each host and says
    # what to set; nothing else is started.
    for key, value in ROOT_ENV.items():
        monkeypatch.setenv(key, value)
    hosts = three_namespace_hosts
    assert HYDRA is not None
    hostfile = tmp_path / "hosts"
    hostfile.write_text(format_hostfile(hosts.hosts))
    settings = hosts.run_settings(tmp_path / "data", hydra=HYDRA)
    del settings["launcher.network_interface"]
    results = tmp_path / "results"
    plan = apply_overrides(
        load_config(None),
        {**settings, "cluster.deadlines.register_s": 600, "output.results_dir": str(results)},
    )
    with pytest.raises(LaunchError) as failed:
        run_plan(plan, nodes_spec=str(hostfile))
    message = str(failed.value)
    (recorded_path,) = results.glob("*/manifest.json")
    recorded = json.loads(recorded_path.read_text())
    assert message.startswith("cannot reach 3 of 3 hosts through mpirun: "), message
    for host in hosts.hosts:
        assert f"{host.name}: cannot finish: " in message
    assert "unable to connect to server" in message
    assert "launcher.network_interface must name this machine's interface" in message
    assert "timed out" not in message
    assert recorded["status"] == "failed" and recorded["error"] == message
    assert recorded["preflight"] is None and recorded.get("daemons") in (None, [])
    assert processes_mentioning(str(hosts.agent)) == []
    assert mounts_under(tmp_path) == []
