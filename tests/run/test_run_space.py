"""The main job's block size is a ceiling: on a disk with less room than
ranks x 8 GiB it is lowered to what fits, and the run says so, instead of
failing with ENOSPC in the middle of its write phase."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from run_helpers import benchfs_run, manifest, run_dirs, small_args, summary

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.timeout(300)]

SMALL = 64 << 20


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB tmpfs: the default 4 ranks x 8 GiB cannot fit (root only)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    disk = tmp_path / "small"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SMALL}", "tmpfs", str(disk)], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _stonewalled(tmp_path: Path, data_dir: Path) -> list[str]:
    args = small_args(tmp_path)
    args[args.index(f"cluster.data_dir={tmp_path / 'data'}")] = f"cluster.data_dir={data_dir}"
    args[args.index("workload.stonewall_s=0")] = "workload.stonewall_s=2"
    args[args.index("--block-size") + 1] = "8g"
    return args


def test_a_disk_smaller_than_the_ceiling_lowers_the_block_size(
    tmp_path: Path, small_disk: Path
) -> None:
    done = benchfs_run(_stonewalled(tmp_path, small_disk))
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    recorded = manifest(run_dir)
    assert recorded["status"] == "completed"
    (note,) = [n for n in recorded["notes"] if n.startswith("workload.block_size lowered")]
    assert "from 8g " in note and str(small_disk) in note and "4 ranks" in note, note
    block = summary(run_dir)["parameters"]["blockSize"]
    assert 0 < block <= SMALL * 0.8 / 4
    assert block % (64 << 10) == 0, "whole transfers"
    assert list(small_disk.iterdir()) == [], "the run's data is removed"


def test_a_fixed_size_run_keeps_the_size_asked_for(tmp_path: Path, small_disk: Path) -> None:
    """Without a stonewall the size is the measurement: not lowered, and the
    full disk is the run's error."""
    args = _stonewalled(tmp_path, small_disk)
    args[args.index("workload.stonewall_s=2")] = "workload.stonewall_s=0"
    args[args.index("--block-size") + 1] = "32m"
    done = benchfs_run(args)
    assert done.returncode == 2, done.stderr
    assert "No space left on device" in done.stderr.strip().splitlines()[-1]


def test_a_suite_on_a_small_disk_lowers_its_ior_ceilings(tmp_path: Path, small_disk: Path) -> None:
    """io500-quick's files (4 ranks x 128 MiB, x 2,000 x 47,008 bytes and x
    2,000 mdtest-hard files) cannot fit 64 MiB: the ceilings are lowered
    and the suite completes."""
    args = small_args(tmp_path, "--suite", "io500-quick",
                      "--set", f"workload.target=posix:{small_disk}")  # fmt: skip
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    recorded = manifest(run_dir)
    (note,) = [n for n in recorded["notes"] if n.startswith("suite.ior_easy_block_size lowered")]
    assert str(small_disk) in note and "4 ranks" in note, note
    suite = recorded["suite"]
    easy, segments = suite["ior_easy_block_size"], suite["ior_hard_segments"]
    files = suite["mdtest_hard_files"]
    assert 0 < easy + segments * 47008 + files * 4096 <= SMALL * 0.8 / 4
    assert easy % (1 << 20) == 0, "whole transfers"
    assert summary(run_dir)["suite"]["ior_hard_segments"] == segments
    assert list(small_disk.iterdir()) == [], "the suite's data is removed"
