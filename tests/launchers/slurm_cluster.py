"""A real Slurm cluster whose nodes are the namespace hosts of netns_hosts.

munged and slurmctld run on this machine (slurmctld reached at the bridge
address), and one slurmd per host inside that host's network namespace with
a host name of its own (a UTS namespace), so the Slurm node named after the
namespace is that namespace, as a compute node is its machine. Everything
lives in one temp dir with a generated slurm.conf and munge key; no cgroups,
no accounting, no systemd. All of it is stopped afterwards.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from launchers.netns_hosts import NamespaceHosts

PROGRAMS = ("munged", "slurmctld", "slurmd", "salloc", "srun", "squeue", "sinfo", "scancel")
MISSING_REASON = (
    "needs Slurm and MUNGE (Debian packages slurmctld slurmd slurm-client munge): "
    "no {missing} on PATH"
)
# Starting and stopping daemons, waiting for idle nodes or ended jobs: guards only.
DEADLINE_S = 60.0
# Each node holds more CPUs than this machine has, so the daemons' and
# ranks' steps (srun --overlap) fit beside one another.
NODE_CPUS = 8
SLURMD_PORT = 6818  # each slurmd has a network namespace of its own

SLURM_CONF = """\
ClusterName=benchfs
SlurmctldHost={controller}({bridge_address})
SlurmctldPort={controller_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool/%n
TmpFS={dir}/tmp/%n
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/spool/%n/slurmd.pid
SlurmctldLogFile={dir}/log/slurmctld.log
SlurmdLogFile={dir}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MailProg=/bin/true
{nodes}
PartitionName=benchfs Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
# TmpFS per node: slurmstepd's PMIx server makes its directories there by job
# and step, which the three slurmd of one machine would otherwise share.
# IgnoreSystemd: a cgroup v2 machine's slurmd would ask systemd for a scope.
CGROUP_CONF = "IgnoreSystemd=yes\n"


@dataclass
class SlurmCluster:
    hosts: NamespaceHosts
    directory: Path
    env: dict[str, str]  # what Slurm's commands need: SLURM_CONF

    def salloc(
        self, tasks_per_node: int, argv: Sequence[str], *, env: dict[str, str], timeout: float
    ) -> tuple[subprocess.CompletedProcess[str], int]:
        """``argv`` inside a new allocation of every node, as a user runs a
        command under ``salloc``; the process and the allocation's job id."""
        command = [
            "salloc", f"-N{len(self.hosts.hosts)}", "--exclusive",
            f"--ntasks-per-node={tasks_per_node}", "-J", "benchfs-test", *argv,
        ]  # fmt: skip
        # Its own session: past the timeout, salloc and the command under it
        # get SIGTERM together (benchfs cleans up on it), then SIGKILL.
        process = subprocess.Popen(
            command, env={**env, **self.env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL, text=True, start_new_session=True,
        )  # fmt: skip
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _end_group(process, signal.SIGTERM)
            stdout, stderr = process.communicate()
            raise AssertionError(f"salloc still ran after {timeout:.0f} s:\n{stderr}") from None
        done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
        granted = re.search(r"Granted job allocation (\d+)", done.stderr)
        assert granted is not None, done.stderr
        return done, int(granted.group(1))

    def jobs(self) -> list[str]:
        """Jobs slurmctld still lists (pending, running or completing)."""
        return self._query(["squeue", "-h", "-o", "%i %T"]).splitlines()

    def wait_jobs_ended(self) -> None:
        """Wait until slurmctld lists no job: after its command, a job of many
        nodes stays completing until each node's slurmd has said it is done."""
        _wait(lambda: self.jobs() == [], "end of every job", self)

    def node_states(self) -> dict[str, str]:
        lines = self._query(["sinfo", "-h", "-N", "-o", "%N %T"]).splitlines()
        return dict(line.split() for line in lines)

    def _query(self, argv: list[str]) -> str:
        done = subprocess.run(
            argv, env={**os.environ, **self.env}, capture_output=True, text=True, timeout=30
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    def logs(self) -> str:
        return "\n".join(
            f"--- {path.name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-15:])
            for path in sorted((self.directory / "log").iterdir())
        )


def slurm_missing() -> str | None:
    missing = [name for name in PROGRAMS if shutil.which(name) is None]
    return MISSING_REASON.format(missing=", ".join(missing)) if missing else None


def slurm_cluster_fixture(
    hosts: NamespaceHosts, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SlurmCluster]:
    """Slurm on ``hosts``, each namespace one node named after it, all idle."""
    if (reason := slurm_missing()) is not None:
        pytest.skip(reason)
    directory = tmp_path_factory.mktemp("slurm")
    node_dirs = [f"{kind}/{host.name}" for kind in ("spool", "tmp") for host in hosts.hosts]
    for sub in ("munge", "state", "log", *node_dirs):
        (directory / sub).mkdir(parents=True)
    munge = directory / "munge"
    munge.chmod(0o700)
    (munge / "key").write_bytes(os.urandom(1024))
    (munge / "key").chmod(0o600)
    conf = directory / "slurm.conf"
    conf.write_text(_slurm_conf(hosts, directory))
    (directory / "cgroup.conf").write_text(CGROUP_CONF)
    cluster = SlurmCluster(hosts, directory, {"SLURM_CONF": str(conf)})
    env = {**os.environ, **cluster.env}
    started: list[subprocess.Popen[bytes]] = []
    try:
        # -F: in the foreground, so it is ours to stop; -f: the temp dir's
        # modes are not those of /etc/munge, which munged otherwise insists on.
        started.append(_start(directory, "munged", env, [
            "munged", "-F", "-f", f"--socket={munge / 'socket'}", f"--key-file={munge / 'key'}",
            f"--pid-file={munge / 'pid'}", f"--seed-file={munge / 'seed'}",
            f"--log-file={directory / 'log' / 'munged.log'}",
        ]))  # fmt: skip
        _wait(lambda: (munge / "socket").exists(), "munged's socket", cluster)
        started.append(_start(directory, "slurmctld", env, ["slurmctld", "-D"]))
        _wait(lambda: cluster.node_states(), "slurmctld to answer", cluster)
        for host in hosts.hosts:
            # nsenter --net keeps this machine's mounts (slurmd reads
            # /sys/fs/cgroup, which ``ip netns exec`` hides); unshare --uts
            # gives the node its own host name.
            enter = ["nsenter", f"--net=/run/netns/{host.name}", "unshare", "--uts"]
            become = f"hostname {host.name} && exec slurmd -D -N {host.name}"
            started.append(
                _start(directory, f"slurmd-{host.name}", env, [*enter, "sh", "-c", become])
            )
        names = {host.name for host in hosts.hosts}
        _wait(lambda: cluster.node_states() == dict.fromkeys(names, "idle"), "idle nodes", cluster)
        yield cluster
    finally:
        _stop_all(cluster, started)


def _slurm_conf(hosts: NamespaceHosts, directory: Path) -> str:
    nodes = "\n".join(
        f"NodeName={host.name} NodeAddr={_address('-n', host.name, 'eth0')} CPUs={NODE_CPUS}"
        " State=UNKNOWN"
        for host in hosts.hosts
    )
    return SLURM_CONF.format(
        controller=socket.gethostname().split(".")[0],
        bridge_address=_address(hosts.bridge),
        controller_port=_free_port(),
        slurmd_port=SLURMD_PORT,
        munge_socket=directory / "munge" / "socket",
        dir=directory,
        nodes=nodes,
    )


def _address(*where: str) -> str:
    """The IPv4 address of an interface: ``(bridge,)`` here, or ``("-n",
    namespace, interface)`` in a namespace."""
    *namespace, device = where
    shown = subprocess.run(
        ["ip", *namespace, "-4", "-o", "addr", "show", "dev", device],
        check=True, capture_output=True, text=True, timeout=30,
    ).stdout  # fmt: skip
    found = re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", shown)
    assert found is not None, shown
    return found.group(1)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        port: int = probe.getsockname()[1]
        return port


def _start(
    directory: Path, name: str, env: dict[str, str], argv: list[str]
) -> subprocess.Popen[bytes]:
    with (directory / "log" / f"{name}.out").open("wb") as out:
        return subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip


def _wait(check: Callable[[], object], what: str, cluster: SlurmCluster) -> None:
    end = time.monotonic() + DEADLINE_S
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"Slurm: no {what} within {DEADLINE_S:.0f} s:\n{cluster.logs()}")
        time.sleep(0.2)


def _stop_all(cluster: SlurmCluster, started: list[subprocess.Popen[bytes]]) -> None:
    """Cancel every job (their steps end with them), then stop the daemons
    in the reverse order of their start: slurmd, slurmctld, munged."""
    if len(started) >= 2:  # slurmctld was started
        subprocess.run(
            ["scancel", "--full", "--user=root"], env={**os.environ, **cluster.env},
            capture_output=True, timeout=30,
        )  # fmt: skip
        end = time.monotonic() + DEADLINE_S
        while cluster.jobs() and time.monotonic() < end:
            time.sleep(0.2)
    for process in reversed(started):
        _end_group(process, signal.SIGTERM)


def _end_group(process: subprocess.Popen[Any], signum: int) -> None:
    """``signum`` to the process's group, SIGKILL if it is still there after the deadline."""
    if process.poll() is None:
        os.killpg(process.pid, signum)
    try:
        process.wait(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
