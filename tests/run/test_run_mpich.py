"""`benchfs run` for real through MPICH's Hydra (``mpiexec.hydra``): the
mpirun launcher's mpich flavour starts the daemon, the host helper and the
mpi4py ranks on this machine, named ``localhost`` in a hostfile."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from run_helpers import assert_nothing_left, benchfs_run, manifest, mount_missing, small_args

from analysis.jsonlines import read_json_lines

MiB = 1 << 20
HYDRA = shutil.which("mpiexec.hydra") or shutil.which("mpiexec.mpich")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        HYDRA is None, reason="needs MPICH's mpiexec.hydra or mpiexec.mpich (Debian package mpich)"
    ),
]


@pytest.mark.parametrize("interface", ["native", "mount"])
def test_run_through_hydra_writes_and_reads_verified(tmp_path: Path, interface: str) -> None:
    if interface == "mount" and mount_missing() is not None:
        pytest.skip(str(mount_missing()))
    assert HYDRA is not None
    hostfile = tmp_path / "hosts"
    hostfile.write_text("localhost slots=2\n")
    args = small_args(
        tmp_path,
        "--nodes", str(hostfile),
        "--set", "launcher.name=mpirun",
        "--set", "launcher.flavour=mpich",
        "--set", f"launcher.executable={HYDRA}",
        "--set", "workload.tasks_per_node=2",
        "--set", f"workload.interface={interface}",
        "--verify",
        "--json",
    )  # fmt: skip
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["parameters"]["interface"] == interface
    write, read = document["phases"]
    for phase in (write, read):
        assert phase["numTasks"] == 2
        assert phase["bytes"] == 2 * MiB
        assert phase["errors"] == 0
    assert read["verify_errors"] == 0
    run_dir = Path(document["results_dir"])
    rows = read_json_lines(run_dir / "workload" / "ranks.jsonl")
    # Two distinct ranks each wrote and read its MiB: mpi4py joined MPICH's job,
    # rather than each process running alone as rank 0 of 1.
    assert sorted((row["phase"], row["rank"], row["bytes"]) for row in rows) == [
        ("read", 0, MiB), ("read", 1, MiB), ("write", 0, MiB), ("write", 1, MiB),
    ]  # fmt: skip
    recorded = manifest(run_dir)
    assert recorded["status"] == "completed"
    assert recorded["interface"] == interface
    assert recorded["effective_config"]["launcher"]["flavour"] == "mpich"
    command = recorded["ranks"]["command"]
    assert command[:7] == [HYDRA, "-hosts", "localhost", "-ppn", "2", "-n", "2"]
    assert command[7:10] == ["-genv", "MPI4PY_MPIABI", "mpich"]
    assert "benchfs.node.rank" in command
    data_dir = Path(recorded["daemons"][0]["data_dir"])
    token = data_dir.parent.name.removeprefix("benchfs-").rsplit("-g", 1)[0]
    assert_nothing_left(tmp_path, token, [d["pid"] for d in recorded["daemons"]])


def test_default_local_cluster_ranks_through_hydra(tmp_path: Path) -> None:
    # The embedded cluster (launcher auto: local) starts its ranks with Hydra on
    # this machine, found by its own name: plain mpiexec here is OpenMPI's.
    assert HYDRA is not None
    args = small_args(tmp_path, "--set", "launcher.flavour=mpich", "--verify", "--json")
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    write, read = document["phases"]
    assert write["bytes"] == read["bytes"] == 4 * MiB
    assert read["verify_errors"] == 0
    run_dir = Path(document["results_dir"])
    rows = read_json_lines(run_dir / "workload" / "ranks.jsonl")
    assert sorted((row["phase"], row["rank"]) for row in rows) == [
        (phase, rank) for phase in ("read", "write") for rank in range(4)
    ]
    recorded = manifest(run_dir)
    assert recorded["ranks"]["launcher"] == "local"
    hydra = Path(HYDRA).name
    assert recorded["ranks"]["command"][:6] == [hydra, "-n", "4", "-genv", "MPI4PY_MPIABI", "mpich"]
    data_dir = Path(recorded["daemons"][0]["data_dir"])
    token = data_dir.parent.name.removeprefix("benchfs-").rsplit("-g", 1)[0]
    assert_nothing_left(tmp_path, token, [d["pid"] for d in recorded["daemons"]])
