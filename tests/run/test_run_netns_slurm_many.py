"""`benchfs run --nodes slurm` across sixteen hosts in one Slurm allocation:
each host a network namespace whose slurmd is the Slurm node of that name,
a daemon and four ranks on each started by the srun launcher as steps of the
one job, UCX over tcp between them; the run stops the daemons and removes
their files on every host through srun, and leaves nothing."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from launchers.slurm_cluster import SlurmCluster
from run_helpers import ROOT_ENV, assert_nothing_left, manifest, run_dirs, small_args, summary

MiB = 1 << 20
TASKS_PER_NODE = 4
pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(480)]


def test_sixteen_namespace_hosts_through_srun_in_one_allocation(
    slurm_on_sixteen_namespace_hosts: SlurmCluster, tmp_path: Path
) -> None:
    cluster = slurm_on_sixteen_namespace_hosts
    names = [host.name for host in cluster.hosts.hosts]
    ranks = len(names) * TASKS_PER_NODE
    results = tmp_path / "results"
    args = small_args(
        tmp_path,
        "--nodes", "slurm",
        "--set", "launcher.name=srun",
        "--set", f"workload.tasks_per_node={TASKS_PER_NODE}",
        "--set", "workload.verify=true",
    )  # fmt: skip
    done, _ = cluster.salloc(
        TASKS_PER_NODE,
        [sys.executable, "-m", "benchfs", "run", *args],
        env={**os.environ, **ROOT_ENV, "UCX_TLS": "tcp,self"},
        timeout=400,
    )
    assert done.returncode == 0, done.stdout + done.stderr

    (run_dir,) = run_dirs(results)
    write, read = summary(run_dir)["phases"]
    for phase in (write, read):
        # numTasks: the ranks were one MPI job across the sixteen hosts.
        assert (phase["numTasks"], phase["bytes"], phase["errors"]) == (ranks, ranks * MiB, 0)
    assert read["verify_errors"] == 0
    recorded = manifest(run_dir)
    assert recorded["ranks"]["launcher"] == "srun"
    assert recorded["ranks"]["per_host"] == dict.fromkeys(names, TASKS_PER_NODE)
    assert [d["node_name"] for d in recorded["daemons"]] == names
    assert recorded["membership"]["daemons"] == len(names)
    log = (run_dir / "logs" / "daemons" / "daemons-srun.log").read_text()
    assert log.count("stopped (SIGTERM") == len(names), log

    # The allocation ends with the command, and the run left nothing.
    cluster.wait_jobs_ended()
    data_dir = Path(recorded["daemons"][0]["data_dir"])
    token = data_dir.parent.name.removeprefix("benchfs-").rsplit("-g", 1)[0]
    assert_nothing_left(tmp_path, token)
