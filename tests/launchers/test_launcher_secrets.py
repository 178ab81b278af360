"""A secret of the job (the session key) never goes on a launcher's command
line, which any user of the node can read in /proc/PID/cmdline: launchers pass
it on by name, and the real mpirun and Hydra deliver it to the ranks."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from benchfs.cluster.hostfile import Host
from benchfs.cluster.processes import process_environment
from benchfs.launchers import LocalLauncher, MpirunLauncher, SrunLauncher

KEY = "0123456789abcdef" * 4
ENV = {"UCX_TLS": "tcp", "BENCHFS_SESSION_KEY": KEY}
A = Host("a", 2)
ARGV = ["printenv", "BENCHFS_SESSION_KEY"]
HYDRA = next((p for p in ("mpiexec.hydra", "mpiexec.mpich") if shutil.which(p)), None)


def _commands() -> dict[str, list[str]]:
    openmpi = MpirunLauncher(allow_run_as_root=False)
    mpich = MpirunLauncher(flavour="mpich")
    return {
        "local": LocalLauncher().command(A, ARGV, env=ENV),
        "openmpi": openmpi.ranks_command([A], 1, ARGV, env=ENV),
        "openmpi here": openmpi.ranks_on_this_host(1, ARGV, env=ENV),
        "mpich": mpich.ranks_command([A], 1, ARGV, env=ENV),
        "mpich here": mpich.ranks_on_this_host(1, ARGV, env=ENV),
        "srun": SrunLauncher().command(A, ARGV, env=ENV),
    }


def test_no_command_line_holds_the_key() -> None:
    for name, argv in _commands().items():
        assert not any(KEY in token for token in argv), f"{name}: {argv}"


def test_the_key_goes_by_name() -> None:
    commands = _commands()
    assert commands["local"] == ["env", "UCX_TLS=tcp", *ARGV]
    assert commands["openmpi"][-4:-2] == ["-x", "BENCHFS_SESSION_KEY"]
    assert commands["mpich"][-4:-2] == ["-genvlist", "BENCHFS_SESSION_KEY"]
    assert "--export=ALL,UCX_TLS=tcp,BENCHFS_SESSION_KEY" in commands["srun"]


def _delivered(argv: list[str]) -> str:
    env = process_environment({**os.environ, "BENCHFS_SESSION_KEY": KEY})
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_real_openmpi_delivers_the_key_by_name() -> None:
    assert shutil.which("mpirun"), "mpirun (OpenMPI) is installed by make build"
    argv = MpirunLauncher().ranks_on_this_host(1, ARGV, env=ENV)
    assert _delivered(argv) == KEY


@pytest.mark.skipif(HYDRA is None, reason="MPICH's mpiexec.hydra is not installed")
def test_real_hydra_delivers_the_key_by_name() -> None:
    argv = MpirunLauncher(flavour="mpich", executable=HYDRA).ranks_on_this_host(1, ARGV, env=ENV)
    assert _delivered(argv) == KEY
