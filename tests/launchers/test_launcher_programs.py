"""The exact command lines of the node programs through each launcher
(``benchfs.launchers.programs``)."""

from __future__ import annotations

from pathlib import Path

from benchfs.cluster.hostfile import Host
from benchfs.launchers import get_launcher
from benchfs.launchers.programs import (
    MountArgs,
    PreflightArgs,
    daemon_argv,
    daemon_rank_argv,
    diagnose_argv,
    diagnose_worker,
    host_job,
    mount_argv,
    mounts_job,
    workload_job,
)

PY = "/venv/bin/python"
HOSTS = [Host("n1", 4), Host("n2", 4)]


def test_workload_ranks_commands() -> None:
    spec = Path("/s/p0/spec.json")
    env = {"OMPI_MCA_btl_vader_backing_directory": "/dev/shm/benchfs-1"}
    local = workload_job(
        get_launcher("local", allow_run_as_root=False),
        [Host("local0"), Host("local1")], 2, spec, env=env, python=PY,
    )  # fmt: skip
    assert local == [
        "mpirun", "--oversubscribe", "-np", "4",
        "-x", "OMPI_MCA_btl_vader_backing_directory=/dev/shm/benchfs-1",
        PY, "-m", "benchfs.node.rank", "/s/p0/spec.json",
    ]  # fmt: skip
    mpirun = workload_job(get_launcher("mpirun", allow_run_as_root=True), HOSTS, 3, spec, python=PY)
    assert mpirun == [
        "mpirun", "--allow-run-as-root", "-np", "6", "-H", "n1:3,n2:3", "--map-by", "slot",
        PY, "-m", "benchfs.node.rank", "/s/p0/spec.json",
    ]  # fmt: skip
    srun = workload_job(get_launcher("srun"), HOSTS, 3, spec, python=PY)
    assert srun == [
        "srun", "--overlap", "--mpi=pmix", "-w", "n1,n2", "-N2", "-n6", "--ntasks-per-node=3",
        PY, "-m", "benchfs.node.rank", "/s/p0/spec.json",
    ]  # fmt: skip


def test_node_jobs_run_once_per_host() -> None:
    launcher = get_launcher("mpirun", allow_run_as_root=False)
    assert host_job(launcher, HOSTS, "clean", ["/d/benchfs-1-g0"], python=PY) == [
        "mpirun", "-np", "2", "-H", "n1:1,n2:1", "--map-by", "slot",
        PY, "-m", "benchfs.node.host", "clean", "/d/benchfs-1-g0",
    ]  # fmt: skip
    # The stop: one job that stops the daemons and then removes the paths on each host.
    stop = ["/s/g0/registry", "5", "/d/benchfs-1-g0", "/dev/shm/benchfs-1"]
    assert host_job(launcher, HOSTS, "stop", stop, python=PY) == [
        "mpirun", "-np", "2", "-H", "n1:1,n2:1", "--map-by", "slot",
        PY, "-m", "benchfs.node.host", "stop", "/s/g0/registry", "5",
        "/d/benchfs-1-g0", "/dev/shm/benchfs-1",
    ]  # fmt: skip


def test_program_argv_of_each_node_program() -> None:
    assert daemon_argv(Path("/c/daemon-0.toml"), python=PY) == [
        PY, "-m", "benchfs.node.daemon", "--config", "/c/daemon-0.toml",
    ]  # fmt: skip
    assert daemon_rank_argv(Path("/c"), None, python=PY) == [
        PY, "-m", "benchfs.node.daemon", "--config-dir", "/c",
    ]  # fmt: skip
    assert diagnose_argv(Path("/d/n1"), "n1", quick=True, python=PY) == [
        PY, "-m", "benchfs.node.diagnose", "--dir", "/d/n1", "--node-name", "n1", "--quick",
    ]  # fmt: skip
    preflight = PreflightArgs(transfer_size=65536, files=8, file_size=1 << 24, runtime_s=1.5)
    assert diagnose_worker(
        get_launcher("local"), Host("n1"), Path("/d/n1"), preflight=preflight, python=PY
    ) == [
        PY, "-m", "benchfs.node.diagnose", "--dir", "/d/n1", "--node-name", "n1",
        "--preflight", "--transfer-size", "65536", "--files", "8",
        "--file-size", "16777216", "--runtime", "1.5",
    ]  # fmt: skip


MOUNT_SETTINGS = ("--threads", "4", "--entry-timeout", "0.5", "--session-spin", "50")
MOUNT = MountArgs(
    registry_dir=Path("/s/g0/registry"),
    mount_root=Path("/d/benchfs-1-ab-mnt-p0"),
    ready_dir=Path("/s/mounts-p0"),
    settings=MOUNT_SETTINGS,
)
MOUNT_OPTIONS = [
    "--registry", "/s/g0/registry", "--mount-root", "/d/benchfs-1-ab-mnt-p0",
    "--ready-dir", "/s/mounts-p0", *MOUNT_SETTINGS,
]  # fmt: skip


def test_mount_commands_one_per_node_here_and_one_job_across_hosts() -> None:
    assert mount_argv(MOUNT, "local2", python=PY) == [
        PY, "-m", "benchfs.node.mount", *MOUNT_OPTIONS, "--node", "local2",
    ]  # fmt: skip
    mpirun = mounts_job(get_launcher("mpirun", allow_run_as_root=False), HOSTS, MOUNT, python=PY)
    assert mpirun == [
        "mpirun", "-np", "2", "-H", "n1:1,n2:1", "--map-by", "slot",
        PY, "-m", "benchfs.node.mount", *MOUNT_OPTIONS, "--nodes", "n1", "n2",
    ]  # fmt: skip
