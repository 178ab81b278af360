"""A real FUSE mount of a real daemon cluster, for the mount tests."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from daemon_cluster import Cluster

from benchfs.cluster.processes import ManagedProcess, kill_group, wait_process
from benchfs.mount.control import mount_in_background, unmount
from benchfs.mount.mountinfo import find_mount
from benchfs.mount.settings import MountSettings

#: Generous: only guards against a hang.
HANG_GUARD_S = 120.0


#: The other user of the tests that need one: nobody, with no other group.
NOBODY = 65534


def python_as_nobody(cwd: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Runs a Python ``script`` (with ``args``) as uid 65534 through
    ``setpriv``, started in ``cwd`` (the tests' temporary directories above
    a mount are private to root)."""
    return subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
         sys.executable, "-c", script, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        check=False,
    )  # fmt: skip


@contextmanager
def small_tmpfs(directory: Path, size: str) -> Iterator[Path]:
    """``directory`` (created) with a private tmpfs of ``size`` (``16m``) on it,
    for daemons' data that must run out of space; skips where none can be mounted."""
    directory.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a {size} tmpfs for the daemons: {done.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=False)


def skip_without_fuse() -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting through FUSE here needs root (/dev/fuse is root-only)")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse on this machine")
    if shutil.which("fusermount3") is None:
        pytest.skip("fusermount3 is not installed (Debian package fuse3)")


def wait_for(condition: Callable[[], bool], what: str, guard_s: float = HANG_GUARD_S) -> None:
    """Until ``condition()``; fails after ``guard_s`` (a hang, not a slow run)."""
    until = time.monotonic() + guard_s
    while not condition():
        if time.monotonic() > until:
            pytest.fail(f"no {what} within {guard_s:g} s")
        time.sleep(0.02)


def removed_once_released(remove: Callable[[], object], what: str) -> None:
    """Runs ``remove`` (an rmdir or rmtree on the mount) until it no longer
    fails with ENOTEMPTY. The kernel sends the release of a close after the
    close returns, so a file unlinked right after its last close may still
    be open for the mount, which then keeps it under a hidden name until
    that release arrives (docs/MOUNT.md)."""

    def removed() -> bool:
        try:
            remove()
        except OSError as error:
            if error.errno != errno.ENOTEMPTY:
                raise
            return False
        return True

    wait_for(removed, what)


class Mounted:
    """A cluster, its mount point and the background mount process."""

    def __init__(self, cluster: Cluster, root: Path, settings: MountSettings) -> None:
        self.cluster = cluster
        self.point = root / "mnt"
        self.point.mkdir()
        self.log = root / "mount.log"
        self.settings = settings
        self.process: ManagedProcess | None = None

    def start(self) -> None:
        self.cluster.start()
        self.cluster.wait_registered(*self.cluster.names)
        self.process = mount_in_background(
            self.cluster.registry, self.point, self.settings, self.log
        )

    def __enter__(self) -> Mounted:
        """Started for the time of a ``with`` block; stopped after it, or when
        the start fails part way (a cluster up and no mount)."""
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def is_mounted(self) -> bool:
        entry = find_mount(self.point)
        return entry is not None and entry.is_benchfs

    @contextmanager
    def another_mount(self, root: Path) -> Iterator[Path]:
        """A second mount of the same cluster at ``root``/mnt, for the time of the block
        (another node's view: its own clients, inode table and kernel caches)."""
        point = root / "mnt"
        point.mkdir()
        process = mount_in_background(
            self.cluster.registry, point, self.settings, root / "mount.log"
        )
        try:
            yield point
        finally:
            try:
                if find_mount(point) is not None:
                    unmount(point)
                if process.returncode is None:
                    wait_process(process, HANG_GUARD_S)
            finally:
                if process.returncode is None:
                    kill_group(process)

    def stop(self) -> None:
        """Unmount (if still mounted), wait for the mount process, stop the daemons."""
        try:
            if self.is_mounted():
                unmount(self.point)
            if self.process is not None and self.process.returncode is None:
                wait_process(self.process, HANG_GUARD_S)
        finally:
            if self.process is not None and self.process.returncode is None:
                kill_group(self.process)
            self.cluster.stop()
