"""Host lists too long for one argument go in a file the launcher names;
the MPI launchers start real ranks from such a file."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from benchfs.cluster.hostfile import Host
from benchfs.launchers import MpirunLauncher, SrunLauncher, host_lists
from benchfs.launchers.host_lists import HOST_ARGUMENT_BYTES
from benchfs.launchers.mpirun import hydra_executable, mpich_library_dir

# 12,000 hosts by name make "-H" longer than Linux's 131,072 bytes per argument.
MANY = [Host(f"node{i:05d}", 48) for i in range(12_000)]
ARGV = ["prog"]


def option_value(command: list[str], option: str) -> str:
    return command[command.index(option) + 1]


def only_file(directory: Path) -> Path:
    (path,) = directory.iterdir()
    return path


def test_a_long_openmpi_host_list_becomes_a_private_hostfile(tmp_path: Path) -> None:
    assert len(",".join(f"{h.name}:48" for h in MANY)) > 131_072 > HOST_ARGUMENT_BYTES
    launcher = MpirunLauncher(allow_run_as_root=False).with_host_files_in(tmp_path / "hosts")
    command = launcher.ranks_command(MANY, None, ARGV)
    assert "-H" not in command
    path = Path(option_value(command, "--hostfile"))
    assert command == [
        "mpirun",
        "-np",
        "576000",
        "--hostfile",
        str(path),
        "--map-by",
        "slot",
        "prog",
    ]
    assert path == only_file(tmp_path / "hosts")
    lines = path.read_text().splitlines()
    assert lines[0] == "node00000 slots=48" and lines[-1] == "node11999 slots=48"
    assert len(lines) == 12_000
    assert stat.S_IMODE(os.stat(tmp_path / "hosts").st_mode) == 0o700
    # The same list again: the same file, written once.
    assert launcher.ranks_command(MANY, None, ARGV) == command
    assert [only_file(tmp_path / "hosts")] == [path]


def test_short_lists_stay_on_the_command_line(tmp_path: Path) -> None:
    launcher = MpirunLauncher(allow_run_as_root=False).with_host_files_in(tmp_path)
    command = launcher.ranks_command([Host("a", 2), Host("b", 3)], None, ARGV)
    assert command == ["mpirun", "-np", "5", "-H", "a:2,b:3", "--map-by", "slot", "prog"]
    assert list(tmp_path.iterdir()) == []


def test_hydra_reads_names_or_names_with_counts_from_its_file(tmp_path: Path) -> None:
    launcher = MpirunLauncher(flavour="mpich", executable="mpiexec").with_host_files_in(tmp_path)
    same = launcher.ranks_command(MANY, 4, ARGV)
    path = Path(option_value(same, "-f"))
    assert same[:7] == ["mpiexec", "-f", str(path), "-ppn", "4", "-n", "48000"]
    assert path.read_text().splitlines()[:2] == ["node00000", "node00001"]
    mixed = [*MANY[:-1], Host("node11999", 2)]
    differ = launcher.ranks_command(mixed, None, ARGV)
    other = Path(option_value(differ, "-f"))
    assert differ[:5] == ["mpiexec", "-f", str(other), "-n", str(11_999 * 48 + 2)]
    assert other.read_text().splitlines()[-2:] == ["node11998:48", "node11999:2"]


def test_srun_takes_the_node_list_as_a_file_path(tmp_path: Path) -> None:
    launcher = SrunLauncher().with_host_files_in(tmp_path)
    command = launcher.ranks_command(MANY, 2, ARGV)
    path = Path(option_value(command, "-w"))
    assert path.parent == tmp_path and "/" in option_value(command, "-w")
    assert command[3:7] == ["-w", str(path), "-N12000", "-n24000"]
    assert path.read_text().splitlines()[-1] == "node11999"


def test_without_a_directory_the_file_goes_in_the_user_s_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    command = MpirunLauncher(allow_run_as_root=False).ranks_command(MANY, 1, ARGV)
    path = Path(option_value(command, "--hostfile"))
    assert path.parent == tmp_path / f"benchfs-{os.geteuid()}" / "host-lists"


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
def test_a_real_mpi_job_starts_its_ranks_from_the_file(
    flavour: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Any list is "too long" here, so that a real launcher reads the file form.
    monkeypatch.setattr(host_lists, "HOST_ARGUMENT_BYTES", 0)
    executable = hydra_executable() if flavour == "mpich" else None
    launcher = MpirunLauncher(
        flavour=flavour,  # type: ignore[arg-type]
        executable=executable,
        library_dir=mpich_library_dir() if flavour == "mpich" else None,
        extra_args=["--oversubscribe"] if flavour == "openmpi" else [],
    ).with_host_files_in(tmp_path / "hosts")
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    probe = [sys.executable, "-c", f"import os; open('{ranks}/' + str(os.getpid()), 'w')"]
    command = launcher.ranks_command([Host("localhost", 3)], None, probe)
    assert ("--hostfile" if flavour == "openmpi" else "-f") in command
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(list(ranks.iterdir())) == 3, (done.stdout, done.stderr)
