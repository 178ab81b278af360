"""``benchfs mount`` / ``benchfs umount``: bad input is one line naming it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mount_support import Mounted


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
    [("--threads", "0"), ("--rpc-deadline", "0"), ("--attr-timeout", "-1")],
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
