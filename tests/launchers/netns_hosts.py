"""Test hosts: network namespaces on this machine.

Each namespace is a host: a veth pair onto a private bridge, its own address,
and an rsh agent for mpirun (OpenMPI's or MPICH's Hydra) that enters the
namespace instead of ssh. All of it is removed afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchfs.cluster.hostfile import Host

# Each host gets a temp dir of its own, as separate machines have: OpenMPI's
# daemons on one "host name" otherwise race to create the same session dir.
# A run names its session dir's base in the orted command line (``-mca
# orte_tmpdir_base "DIR"``): each host's daemon gets DIR/<host> instead.
HOST_TEMP = r"""#!/bin/sh
h=$1; shift; mkdir -p "{tmp}/$h"
c=$(printf '%s' "$*" | sed "s|orte_tmpdir_base \"\([^\"]*\)\"|orte_tmpdir_base \"\1/$h\"|")
"""
AGENT = HOST_TEMP + 'exec ip netns exec "$h" env TMPDIR="{tmp}/$h" sh -c "$c"\n'
# The same, entering only the host's network namespace (nsenter --net): its
# processes share this machine's mounts, as a FUSE mount on a real host is
# seen by every process there (``ip netns exec`` gives each command a fresh
# mount namespace, so a mount made by one is invisible to the next).
NSENTER_AGENT = HOST_TEMP + 'exec nsenter --net=/run/netns/"$h" env TMPDIR="{tmp}/$h" sh -c "$c"\n'

# The same, entering also the host's own mount namespace, one per host that
# lasts as long as the hosts: a mount made on a host is seen by every
# process there and by no other host, as on separate machines.
OWN_MOUNTS_AGENT = HOST_TEMP + (
    'exec nsenter --net=/run/netns/"$h" --mount="{mount_ns}/$h" env TMPDIR="{tmp}/$h" sh -c "$c"\n'
)


@dataclass(frozen=True)
class NamespaceHosts:
    hosts: list[Host]
    subnet: str
    agent: Path
    # This machine's side of the private bridge: the one address the hosts reach it at.
    bridge: str
    # With hosts of their own mounts: the directory of their mount namespaces.
    mount_namespaces: Path | None = None

    def mountinfo(self, host: Host) -> str:
        """``/proc/self/mountinfo`` as processes on ``host`` see it."""
        if self.mount_namespaces is None:
            return Path("/proc/self/mountinfo").read_text()
        enter = f"--mount={self.mount_namespaces / host.name}"
        return subprocess.run(
            ["nsenter", enter, "cat", "/proc/self/mountinfo"],
            check=True, capture_output=True, text=True, timeout=60,
        ).stdout  # fmt: skip

    def mca(self) -> dict[str, str]:
        """MCA parameters that make OpenMPI start its daemons in the namespaces."""
        return {
            "plm_rsh_agent": str(self.agent),
            "oob_tcp_if_include": self.subnet,
            "btl_tcp_if_include": self.subnet,
            "btl": "tcp,self",
            # orted sometimes crashes writing hwloc's shared-memory topology when
            # several daemons share one machine; the topology is not needed here.
            "rtc": "^hwloc",
        }

    def hydra(self, executable: str) -> dict[str, object]:
        """Launcher settings that make MPICH's Hydra start its proxies in the
        namespaces: the agent as an rsh (ssh would get ``-x`` before the host
        name), and the bridge as the interface whose address the proxies
        connect back to (this machine's host name means nothing inside)."""
        return {
            "launcher.flavour": "mpich",
            "launcher.executable": executable,
            "launcher.network_interface": self.bridge,
            "launcher.extra_args": ["-launcher", "rsh", "-launcher-exec", str(self.agent)],
        }

    def run_settings(self, data_dir: Path, hydra: str | None = None) -> dict[str, object]:
        """What every ``benchfs run`` across these hosts sets: mpirun in the
        namespaces (OpenMPI's, or Hydra at path ``hydra``), TCP between them,
        small chunks and pools, short stops."""
        return {
            "launcher.name": "mpirun",
            **({"launcher.mca": self.mca()} if hydra is None else self.hydra(hydra)),
            "cluster.transport": "tcp",
            "cluster.data_dir": str(data_dir),
            "cluster.chunk_size": "256k",
            "cluster.buffer_pool_size": "16m",
            "cluster.deadlines.shutdown_s": 5,
        }


def namespace_inode(name: str) -> int:
    return os.stat(f"/run/netns/{name}").st_ino


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def _own_mount_namespaces(directory: Path, names: list[str]) -> None:
    """A lasting mount namespace per host, ``directory/<name>`` (bound there by
    ``unshare --mount=FILE``, which needs a directory of private propagation)."""
    directory.mkdir()
    subprocess.run(["mount", "--bind", str(directory), str(directory)], check=True)
    subprocess.run(["mount", "--make-private", str(directory)], check=True)
    for name in names:
        (directory / name).touch()
        subprocess.run(
            ["unshare", f"--mount={directory / name}", "--propagation", "private", "true"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip


def _free_subnet() -> int:
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    for octet in range(180 + os.getpid() % 40, 250):
        if f"10.231.{octet}." not in used:
            return octet
    raise RuntimeError("no free 10.231.x.0/24 subnet")


def namespace_hosts_fixture(
    tmp_path_factory: pytest.TempPathFactory,
    count: int = 2,
    shared_mounts: bool = False,
    own_mounts: bool = False,
) -> Iterator[NamespaceHosts]:
    """``count`` namespaces as hosts; fixtures of different counts (or mount
    sharing) can coexist. ``shared_mounts``: the agent enters only the
    network namespace (``NSENTER_AGENT``); ``own_mounts``: each host has a
    mount namespace of its own too (``OWN_MOUNTS_AGENT``)."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    if shutil.which("ip") is None or shutil.which("mpirun") is None:
        pytest.skip("needs iproute2 and mpirun")
    if (shared_mounts or own_mounts) and shutil.which("nsenter") is None:
        pytest.skip("needs nsenter (util-linux)")
    if own_mounts and shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux)")
    tag = (str(os.getpid()) + ("" if count == 2 else f"x{count}") + ("m" if shared_mounts else "")
           + ("o" if own_mounts else ""))  # fmt: skip
    octet = _free_subnet()
    bridge = f"bfsbr{tag}"
    names = [f"bfs{tag}n{index}" for index in range(count)]
    agent = tmp_path_factory.mktemp("netns") / "agent"
    mount_ns = agent.parent / "mount-namespaces"
    text = OWN_MOUNTS_AGENT if own_mounts else NSENTER_AGENT if shared_mounts else AGENT
    agent.write_text(text.format(tmp=agent.parent / "tmp", mount_ns=mount_ns))
    agent.chmod(0o755)
    try:
        if own_mounts:
            _own_mount_namespaces(mount_ns, names)
        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", f"10.231.{octet}.1/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        for index, name in enumerate(names):
            veth = f"bfv{tag}{index}"
            _ip("netns", "add", name)
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", name)
            _ip("-n", name, "addr", "add", f"10.231.{octet}.{10 + index}/24", "dev", "eth0")
            _ip("-n", name, "link", "set", "eth0", "up")
            _ip("-n", name, "link", "set", "lo", "up")
            _ip("link", "set", veth, "master", bridge)
            _ip("link", "set", veth, "up")
        yield NamespaceHosts(
            [Host(name) for name in names],
            f"10.231.{octet}.0/24",
            agent,
            bridge,
            mount_ns if own_mounts else None,
        )
    finally:
        if own_mounts:
            for name in names:
                subprocess.run(["umount", str(mount_ns / name)], capture_output=True)
            subprocess.run(["umount", str(mount_ns)], capture_output=True)
        for name in names:
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True)
