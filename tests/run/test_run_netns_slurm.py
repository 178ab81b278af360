"""`benchfs run --nodes slurm` inside a real Slurm allocation: three hosts,
each a network namespace whose slurmd is the Slurm node of that name, the
command under ``salloc`` as a user runs it, and every daemon, rank and helper
started by the srun launcher as a step of that one job; the ranks form one
OpenMPI job through Slurm's PMIx, UCX over tcp between the hosts."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from launchers.netns_hosts import namespace_inode
from launchers.slurm_cluster import SlurmCluster
from run_helpers import (
    ROOT_ENV,
    NamespaceWatcher,
    assert_nothing_left,
    manifest,
    run_dirs,
    small_args,
    summary,
)

MiB = 1 << 20
TASKS_PER_NODE = 2
pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(300)]


class SlurmStepWatcher(NamespaceWatcher):
    """Notes, for each process a run records, its network namespace, the
    Slurm job and node its step environment names, and its UCX_TLS."""

    @staticmethod
    def _note(paths: Iterator[Path], key: str, into: dict[str, str]) -> None:
        for path in paths:
            try:
                record = json.loads(path.read_text())
                proc = Path(f"/proc/{int(record['pid'])}")
                namespace = os.readlink(proc / "ns" / "net")
                variables = dict(
                    item.split("=", 1)
                    for item in (proc / "environ").read_text().split("\0")
                    if "=" in item
                )
            except (OSError, ValueError, KeyError):
                continue  # not written yet, or the process is already gone
            job, node = variables.get("SLURM_JOB_ID"), variables.get("SLURMD_NODENAME")
            tls = variables.get("UCX_TLS")
            into.setdefault(str(record[key]), f"{namespace} job {job} node {node} tls {tls}")


def test_three_namespace_hosts_through_srun_in_one_allocation(
    slurm_on_three_namespace_hosts: SlurmCluster, tmp_path: Path
) -> None:
    cluster = slurm_on_three_namespace_hosts
    names = [host.name for host in cluster.hosts.hosts]
    results = tmp_path / "results"
    args = small_args(
        tmp_path,
        "--nodes", "slurm",
        "--set", "launcher.name=srun",
        "--set", f"workload.tasks_per_node={TASKS_PER_NODE}",
        "--set", "workload.verify=true",
    )  # fmt: skip
    kinds = {"daemons": ("g*/registry/*.json", "node_name"), "ranks": ("p*/ranks/*.json", "rank")}
    with SlurmStepWatcher(results, kinds) as watcher:
        done, job = cluster.salloc(
            TASKS_PER_NODE,
            [sys.executable, "-m", "benchfs", "run", *args],
            # UCX over tcp between the hosts, chosen as users do on a cluster:
            # UCX_TLS in the environment, whose commas srun's --export cannot carry.
            env={**os.environ, **ROOT_ENV, "UCX_TLS": "tcp,self"},
            timeout=240,
        )
    assert done.returncode == 0, done.stdout + done.stderr

    # Every daemon and rank ran on its own host, as a step of the one job.
    where = {
        name: f"net:[{namespace_inode(name)}] job {job} node {name} tls tcp,self" for name in names
    }
    assert watcher.seen["daemons"] == where
    assert watcher.seen["ranks"] == {
        str(rank): where[names[rank // TASKS_PER_NODE]] for rank in range(3 * TASKS_PER_NODE)
    }
    (run_dir,) = run_dirs(results)
    write, read = summary(run_dir)["phases"]
    for phase in (write, read):
        # numTasks: the six ranks were one MPI job, not six singletons.
        assert (phase["numTasks"], phase["bytes"], phase["errors"]) == (6, 6 * MiB, 0), phase
    assert read["verify_errors"] == 0
    recorded = manifest(run_dir)
    assert recorded["ranks"]["launcher"] == "srun"
    assert recorded["ranks"]["per_host"] == dict.fromkeys(names, TASKS_PER_NODE)
    assert recorded["ranks"]["command"][:7] == [
        "srun", "--overlap", "--mpi=pmix", "-w", ",".join(names), "-N3", "-n6",
    ]  # fmt: skip
    assert [d["node_name"] for d in recorded["daemons"]] == names
    # iostat watched every host through srun, and a single SIGINT ended each watch.
    assert sorted(p.name for p in (run_dir / "iostat").iterdir()) == [f"{n}.json" for n in names]
    assert not any("iostat" in note for note in recorded["notes"]), recorded["notes"]
    # Stopped gracefully through srun: each daemon drained and said so.
    log = (run_dir / "logs" / "daemons" / "daemons-srun.log").read_text()
    assert log.count("stopped (SIGTERM") == 3, log

    # The allocation ends with the command, and the run left nothing.
    cluster.wait_jobs_ended()
    data_dir = Path(recorded["daemons"][0]["data_dir"])
    token = data_dir.parent.name.removeprefix("benchfs-").rsplit("-g", 1)[0]
    assert_nothing_left(tmp_path, token)
