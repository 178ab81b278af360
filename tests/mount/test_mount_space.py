"""A full disk under the mount: a program writing through it gets ENOSPC
(not EIO, not a hang), and the mount goes on working and unmounts."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_cluster import Cluster
from mount_support import HANG_GUARD_S, Mounted, skip_without_fuse, small_tmpfs, wait_for

from benchfs.mount.settings import MountSettings

pytestmark = pytest.mark.core_claim

#: The daemons' data directories share this much space.
SMALL = "16m"

FILL = """
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o600)
block = bytes(range(256)) * 4096
offset = 0
try:
    while offset < (1 << 30):
        offset += os.pwrite(fd, block, offset)
except OSError as e:
    print("errno", e.errno, "after", offset, flush=True)
    sys.exit(3)
print("no error after", offset, flush=True)
"""


@pytest.fixture
def full_disk_mount(tmp_path: Path) -> Iterator[Mounted]:
    skip_without_fuse()
    with (
        small_tmpfs(tmp_path / "data", SMALL),
        Mounted(Cluster(tmp_path, "shm"), tmp_path, MountSettings(rpc_deadline_s=10.0)) as m,
    ):
        yield m


def test_a_full_disk_is_enospc_and_the_mount_survives(full_disk_mount: Mounted) -> None:
    m = full_disk_mount
    big = m.point / "fill"
    done = subprocess.run(
        [sys.executable, "-c", FILL, str(big)],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        check=False,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.split()[:2] == ["errno", str(errno.ENOSPC)], done.stdout
    # The mount still works: the space comes back, and a new file holds
    # what is written to it.
    big.unlink()
    assert not big.exists()
    data = os.urandom(300_000)
    # The space comes back at the writer's last release, which the kernel
    # may send after the unlink (the file is kept hidden until then).
    space = m.cluster.root / "data"
    wait_for(lambda: _free(space) > 2 * len(data), "the filled space back")
    small = m.point / "after"
    small.write_bytes(data)
    assert small.read_bytes() == data
    assert sorted(os.listdir(m.point)) == ["after"]
    m.stop()
    assert not m.is_mounted()
    assert m.process is not None and m.process.returncode == 0


def _free(path: Path) -> int:
    """Bytes free to an unprivileged writer on the file system of ``path``."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize
