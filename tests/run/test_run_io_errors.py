"""A run whose daemons hit a real I/O error (a full file system) fails with one line naming the
rank, the file, the node and the errno, and its manifest records the failure."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from run_helpers import benchfs_run, manifest, run_dirs, scratch_dirs, small_args

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.timeout(300)]


@pytest.fixture
def full_data_dir(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs for the daemons' data: 4 ranks x 1 MiB cannot fit (root only)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    data = tmp_path / "small"
    data.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(data)], check=True)
    try:
        yield data
    finally:
        subprocess.run(["umount", "-l", str(data)], check=False)


def test_a_write_error_fails_the_run_naming_node_file_and_errno(
    tmp_path: Path, full_data_dir: Path
) -> None:
    args = small_args(tmp_path, "--verify")
    args[args.index(f"cluster.data_dir={tmp_path / 'data'}")] = f"cluster.data_dir={full_data_dir}"
    done = benchfs_run(args)
    assert done.returncode == 2, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert "Traceback" not in done.stderr
    assert error.startswith("error: workload rank "), error
    assert "[Errno 28] write testfile." in error and "No space left on device" in error, error
    assert " on node local" in error, error
    (run_dir,) = run_dirs(tmp_path / "results")
    recorded = manifest(run_dir)
    assert recorded["status"] == "failed"
    assert recorded["error"] == error.removeprefix("error: ")
    # Still cleaned up: no scratch directory, no daemon data left on the small file system.
    assert scratch_dirs(tmp_path / "results") == []
    assert list(full_data_dir.iterdir()) == []
