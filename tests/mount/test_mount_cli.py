"""``benchfs mount`` / ``benchfs umount``: bad input is one line naming it."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_cluster import Cluster
from mount_support import Mounted, skip_without_fuse, wait_for
from signal_helpers import assert_stopped_cleanly, interrupt

from benchfs.mount.mountinfo import find_mount


def benchfs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchfs", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def one_line_error(done: subprocess.CompletedProcess[str], *names: str) -> None:
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for name in names:
        assert name in lines[0], done.stderr


def test_mount_names_a_missing_registry(tmp_path: Path) -> None:
    one_line_error(
        benchfs("mount", "--registry", str(tmp_path / "nope"), str(tmp_path)),
        "--registry",
        "nope",
    )


def test_mount_names_a_mount_point_that_is_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    one_line_error(benchfs("mount", "--registry", str(tmp_path), str(tmp_path / "file")), "file")


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--threads", "-1"),
        ("--rpc-deadline", "0"),
        ("--attr-timeout", "-1"),
        ("--session-spin", "-1"),
        ("--session-spin", "1001"),
    ],
)
def test_mount_names_a_bad_setting(tmp_path: Path, option: str, value: str) -> None:
    one_line_error(
        benchfs("mount", "--registry", str(tmp_path), str(tmp_path), option, value), option
    )


def test_umount_refuses_what_is_not_a_mount(tmp_path: Path) -> None:
    one_line_error(benchfs("umount", str(tmp_path)), str(tmp_path), "not a mount point")


def test_umount_refuses_a_mount_of_another_file_system() -> None:
    one_line_error(benchfs("umount", "/proc"), "/proc", "not a BenchFS mount")


def test_mount_refuses_a_second_mount_at_the_same_point(mounted: Mounted) -> None:
    one_line_error(
        benchfs("mount", "--registry", str(mounted.cluster.registry), str(mounted.point)),
        "already",
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Cluster, Path]]:
    """A running cluster and an empty mount point; a mount left there is undone after."""
    skip_without_fuse()
    cluster = Cluster(tmp_path, "shm")
    point = tmp_path / "mnt"
    point.mkdir()
    try:
        cluster.start()
        cluster.wait_registered(*cluster.names)
        yield cluster, point
    finally:
        entry = find_mount(point)
        if entry is not None and entry.is_benchfs:
            subprocess.run(["fusermount3", "-u", str(point)], check=False)
        cluster.stop()


def test_mount_and_umount_from_the_command_line(
    tmp_path: Path, served: tuple[Cluster, Path]
) -> None:
    cluster, point = served
    log = tmp_path / "mount.log"
    done = benchfs("mount", "--registry", str(cluster.registry), str(point), "--log", str(log))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"mounted {point}"), done.stdout
    pid = int(done.stdout.split("(pid ")[1].split(",")[0])
    entry = find_mount(point)
    assert entry is not None and entry.is_benchfs
    (point / "via-cli").write_bytes(b"through the command line")
    assert (point / "via-cli").read_bytes() == b"through the command line"
    done = benchfs("umount", str(point))
    assert done.returncode == 0, done.stderr
    assert find_mount(point) is None
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), "the mount process to exit")


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_signal_unmounts_the_foreground_mount_and_exits_128_plus_it(
    tmp_path: Path, served: tuple[Cluster, Path], signum: int
) -> None:
    cluster, point = served
    args = ["mount", "--registry", str(cluster.registry), str(point), "--foreground"]

    def mounted(_: int) -> bool:
        entry = find_mount(point)
        return entry is not None and entry.is_benchfs

    stopped = interrupt(args, tmp_path, mounted, signum)
    # The guard it started, the mount and its process: all gone.
    assert_stopped_cleanly(stopped, signum, point, logs_on_stderr=True)
    assert "requests served" in stopped.stderr  # its log at unmount
