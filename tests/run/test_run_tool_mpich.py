"""IOR and mdtest built against MPICH, through `benchfs run` on BenchFS's
mount with the mpich flavour: Hydra starts them as one job of every rank,
found on PATH by its own name (plain mpiexec is OpenMPI's here).

An IOR built against OpenMPI cannot run under Hydra (each rank would run
alone), so these need one built with MPICH's compiler wrapper, e.g.
``./configure CC=mpicc.mpich --prefix=/opt/ior-mpich`` in IOR's source, its
``bin`` given as ``$IOR_MPICH_BIN_DIR``."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from run_helpers import (
    benchfs_run,
    manifest,
    needs_mount,
    run_dirs,
    small_args,
    small_ior_and_mdtest,
    summary,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), needs_mount]
HYDRA = shutil.which("mpiexec.hydra") or shutil.which("mpiexec.mpich")
BIN_DIR = os.environ.get("IOR_MPICH_BIN_DIR")


def _built_against_mpich(binary: str) -> bool:
    linked = subprocess.run(["ldd", binary], capture_output=True, text=True, timeout=60).stdout
    return "libmpich" in linked


@small_ior_and_mdtest
def test_ior_and_mdtest_built_against_mpich_run_through_hydra_on_the_mount(
    tmp_path: Path, tool: str, args: str, phase: str
) -> None:
    binary = None if BIN_DIR is None else shutil.which(tool, path=BIN_DIR)
    if binary is None or HYDRA is None:
        pytest.skip(f"{tool} built against MPICH ($IOR_MPICH_BIN_DIR) or MPICH's mpiexec not found")
    assert _built_against_mpich(binary), f"{binary} does not link MPICH's library"
    done = benchfs_run(small_args(
        tmp_path, "--set", "launcher.flavour=mpich", "--interface", "mount",
        "--set", f"workload.tool={tool}", "--set", f"workload.tool_args={args}",
        "--set", f"workload.tool_path={binary}",
    ))  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    phases = {row["phase"]: row for row in summary(run_dir)["phases"]}
    assert phase in phases and all(row["tool"] == tool for row in phases.values())
    # One MPI job of all four ranks: each rank saw the others (20 items each for mdtest).
    tasks = "numTasks" if tool == "ior" else "tasks"
    assert all(row[tasks] == 4 for row in phases.values()), phases
    if tool == "mdtest":
        assert phases[phase]["items"] == 4 * 20
    record = manifest(run_dir)
    launched = record["tool"]["launched"]["job"]
    assert launched[:3] == [Path(HYDRA).name, "-n", "4"]
    assert record["interface"] == "mount"
    assert str(tmp_path) not in Path("/proc/self/mountinfo").read_text()
