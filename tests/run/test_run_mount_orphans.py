"""A run's mount of BenchFS whose orchestrator is gone, found by its mount
point alone (no run record here): `benchfs clean` unmounts it, and leaves
alone a mount of a run that is still going and a mount that is no run's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_cluster import Cluster
from mount_support import skip_without_fuse, wait_for
from run_helpers import environment

from benchfs.cluster.processes import kill_group
from benchfs.mount.cleanup import mounts_under
from benchfs.mount.control import mount_in_background
from benchfs.mount.mountinfo import find_mount
from benchfs.mount.settings import MountSettings

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _gone_pid() -> int:
    """The pid of a process that has exited (no run of that pid is going)."""
    probe = subprocess.Popen(["true"])
    probe.wait()
    return probe.pid


def test_clean_unmounts_the_mounts_of_runs_that_are_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skip_without_fuse()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # no run record of ours anywhere
    (tmp_path / "tmp").mkdir()
    cluster = Cluster(tmp_path / "cluster", "shm")
    (tmp_path / "cluster").mkdir()
    data = tmp_path / "data"
    points = {
        "gone": data / f"benchfs-{_gone_pid()}-abc123-mnt-p0" / "local0",
        "going": data / f"benchfs-{os.getpid()}-abc123-mnt-p0" / "local0",
        "no run's": data / "mine" / "mnt",
    }
    processes = []
    try:
        cluster.start()
        cluster.wait_registered(*cluster.names)
        for name, point in points.items():
            point.mkdir(parents=True, mode=0o700)
            log = tmp_path / f"mount-{name.replace(' ', '_')}.log"
            processes.append(mount_in_background(cluster.registry, point, MountSettings(), log))
        assert len(mounts_under(data)) == 3
        done = subprocess.run(
            [sys.executable, "-m", "benchfs", "clean"],
            capture_output=True, text=True, env=environment(), timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "mounts of runs that are gone: unmounted 1 mounts" in done.stdout, done.stdout
        assert find_mount(points["gone"]) is None
        assert not points["gone"].exists() and not points["gone"].parent.exists()
        assert find_mount(points["going"]) is not None  # this process is that run: going
        assert find_mount(points["no run's"]) is not None
        # The unmounted mount's process ends by itself.
        wait_for(lambda: processes[0].returncode is not None, "the mount process to end")
    finally:
        for point in points.values():
            if find_mount(point) is not None:
                subprocess.run(["fusermount3", "-u", "-z", str(point)], check=False)
        for process in processes:
            if process.returncode is None:
                kill_group(process)
        cluster.stop()
    assert mounts_under(tmp_path) == []
