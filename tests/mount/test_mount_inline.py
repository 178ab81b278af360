"""A mount with ``threads=0``: the session thread issues the RPCs itself."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from daemon_cluster import CHUNK, Cluster
from mount_support import Mounted, skip_without_fuse

from benchfs.mount.settings import MountSettings

pytestmark = pytest.mark.core_claim


@pytest.fixture(scope="module")
def inline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mounted]:
    skip_without_fuse()
    root = tmp_path_factory.mktemp("fuse-inline")
    with Mounted(Cluster(root, "shm"), root, MountSettings(threads=0, rpc_deadline_s=10.0)) as m:
        yield m


def test_files_and_directories_work_inline(inline: Mounted) -> None:
    d = inline.point / "dir"
    d.mkdir()
    data = os.urandom(3 * CHUNK + 17)
    (d / "f").write_bytes(data)
    assert (d / "f").read_bytes() == data
    os.rename(d / "f", d / "g")
    assert os.listdir(d) == ["g"]
    (d / "g").unlink()
    d.rmdir()
    assert not d.exists()


def test_processes_share_the_inline_mount(inline: Mounted) -> None:
    path = inline.point / "shared"
    path.write_bytes(bytes(4 * CHUNK))
    writer = (
        "import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY); i=int(sys.argv[2]);"
        f"os.pwrite(fd, bytes([i+1])*{CHUNK}, i*{CHUNK}); os.close(fd)"
    )
    procs = [subprocess.Popen([sys.executable, "-c", writer, str(path), str(i)]) for i in range(4)]
    for p in procs:
        assert p.wait(timeout=120) == 0
    assert path.read_bytes() == b"".join(bytes([i + 1]) * CHUNK for i in range(4))
