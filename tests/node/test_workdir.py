"""``python -m benchfs.node.workdir`` as the orchestration starts it: a rank
of a tool's job changes into its own node's mount point before becoming the
tool, and the steps on a tool's directory (prepare, timestamp, find,
remove) do their job as real processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchfs.cluster.hostfile import Host
from benchfs.launchers.local import LocalLauncher
from benchfs.launchers.programs import tool_rank_argv, workdir_command
from benchfs.workload.io500_rank import FIND_SIZE, ROOT

DEADLINE_S = 60.0
NODES = ["a", "b"]


def run(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=DEADLINE_S,
                          env={**os.environ, **env})  # fmt: skip


@pytest.fixture
def mount_root(tmp_path: Path) -> Iterator[Path]:
    """A run's mount root with a real mount (tmpfs) at each node's mount point."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    root = tmp_path / "benchfs-1-ab-mnt-p0"
    mounted = []
    try:
        for node in NODES:
            (root / node).mkdir(parents=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs",
                            str(root / node)], check=True, timeout=DEADLINE_S)  # fmt: skip
            mounted.append(root / node)
        yield root
    finally:
        for path in mounted:
            subprocess.run(["umount", str(path)], timeout=DEADLINE_S)


@pytest.mark.root
def test_each_rank_runs_in_its_own_node_s_mount_point(mount_root: Path) -> None:
    # Ranks fill the nodes in order, two each: ranks 0 and 1 on a, 2 and 3 on b.
    for rank in range(4):
        argv = tool_rank_argv(mount_root, NODES, 2, ["sh", "-c", 'pwd > "rank-$R"'])
        done = run(argv, R=str(rank), OMPI_COMM_WORLD_RANK=str(rank))
        assert done.returncode == 0, done.stderr
    for rank in range(4):
        node = NODES[rank // 2]
        assert (mount_root / node / f"rank-{rank}").read_text() == f"{mount_root / node}\n"
        assert (mount_root / node / f"rank-{rank}").stat().st_mode & 0o077 == 0  # private


def test_a_rank_whose_node_is_not_mounted_here_is_one_line_and_runs_nothing(
    tmp_path: Path,
) -> None:
    root = tmp_path / "benchfs-1-ab-mnt-p0"
    (root / "b").mkdir(parents=True)  # there, but nothing mounted on it
    marker = tmp_path / "ran"
    argv = tool_rank_argv(root, NODES, 2, ["touch", str(marker)])
    done = run(argv, OMPI_COMM_WORLD_RANK="3")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.endswith(
        f"rank 3: {root / 'b'} is not mounted on {os.uname().nodename}: "
        "the launcher must place ranks 2..3 on node b"
    ), line
    assert not marker.exists()
    beyond = run(argv, OMPI_COMM_WORLD_RANK="4")
    assert (
        beyond.returncode == 2 and "launcher rank 4: only 2 nodes of 2 ranks each" in beyond.stderr
    )


def test_prepare_timestamp_find_and_remove_a_tool_s_directory(tmp_path: Path) -> None:
    launcher, host = LocalLauncher(), Host("a")
    work = tmp_path / "benchfs-1-ab-p0"
    argv = workdir_command(launcher, host, "prepare", work, ROOT, f"{ROOT}/mdtest-hard")
    assert run(argv).returncode == 0
    assert (work / ROOT / "mdtest-hard").is_dir()
    assert all((p.stat().st_mode & 0o777) == 0o700 for p in (work, work / ROOT))
    again = run(argv)  # the directory is the run's own: never one already there
    assert again.returncode != 0 and "File exists" in again.stderr
    (work / ROOT / "mdtest-hard" / "old.01").write_bytes(b"x" * FIND_SIZE)
    stamped = run(workdir_command(launcher, host, "timestamp", work))
    assert stamped.returncode == 0, stamped.stderr
    newer = int(stamped.stdout)
    assert newer == (work / "io500.timestamp").stat().st_mtime_ns
    os.utime(work / ROOT / "mdtest-hard" / "old.01", ns=(newer - 10**9, newer - 10**9))
    (work / ROOT / "mdtest-hard" / "new.01").write_bytes(b"x" * FIND_SIZE)
    (work / ROOT / "mdtest-hard" / "new.02").write_bytes(b"x" * FIND_SIZE)
    found = run(workdir_command(launcher, host, "find", work, str(newer)))
    assert found.returncode == 0, found.stderr
    counted = json.loads(found.stdout)
    assert (counted["scanned"], counted["found"]) == (3, 1)  # only new.01: newer and *01*
    assert run(workdir_command(launcher, host, "remove", work)).returncode == 0
    assert not work.exists()


def test_a_path_not_a_run_s_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = run(workdir_command(LocalLauncher(), Host("a"), "remove", home))
    assert done.returncode != 0 and f"{home}: not a run's tool directory" in done.stderr
    assert home.is_dir()
    usage = run([sys.executable, "-m", "benchfs.node.workdir", "exec", "r", "x", "--", "ls"])
    assert usage.returncode == 2 and usage.stderr.startswith("usage: ")
