"""A mount whose session thread polls for the next request after serving
one (``session_spin_us``): the same bytes come back, small and large
requests alike, and the setting is checked before anything is mounted."""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Iterator

import pytest
from daemon_cluster import Cluster
from mount_support import Mounted, skip_without_fuse

import benchfs_native
from benchfs.errors import ConfigError
from benchfs.mount.settings import MountSettings

pytestmark = pytest.mark.core_claim
SMALL = 4096


@pytest.fixture(scope="module")
def spinning(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mounted]:
    skip_without_fuse()
    root = tmp_path_factory.mktemp("fuse-spin")
    settings = MountSettings(session_spin_us=200, rpc_deadline_s=10.0)
    with Mounted(Cluster(root, "shm"), root, settings) as m:
        yield m


def block(seed: int, size: int = SMALL) -> bytes:
    return bytes((i * 13 + seed * 101) & 0xFF for i in range(size))


def test_small_direct_writes_and_reads_at_queue_depth_1_byte_for_byte(spinning: Mounted) -> None:
    # One 4 KiB O_DIRECT request at a time, as fio's QD1 job: each is served
    # on the session thread, which then spins for the next.
    path = spinning.point / "small"
    count = 200
    buf = mmap.mmap(-1, SMALL)  # page-aligned, as O_DIRECT asks
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o600)
    try:
        for i in range(count):
            buf[:] = block(i)
            assert os.pwritev(fd, [buf], i * SMALL) == SMALL
        for i in reversed(range(count)):
            assert os.preadv(fd, [buf], i * SMALL) == SMALL
            assert bytes(buf) == block(i), f"block {i}"
    finally:
        os.close(fd)
    assert path.stat().st_size == count * SMALL


def test_large_and_small_requests_mixed_keep_their_bytes(spinning: Mounted) -> None:
    path = spinning.point / "mixed"
    big = 1 << 20
    data = bytearray(block(7, 3 * big))
    path.write_bytes(data)
    with path.open("r+b", buffering=0) as f:
        for i in range(16):
            f.seek(i * big // 8)
            f.write(block(100 + i))
            data[i * big // 8 : i * big // 8 + SMALL] = block(100 + i)
    assert path.read_bytes() == bytes(data)


def test_the_unmount_log_counts_the_spins(tmp_path_factory: pytest.TempPathFactory) -> None:
    skip_without_fuse()
    root = tmp_path_factory.mktemp("fuse-spin-log")
    settings = MountSettings(session_spin_us=50, rpc_deadline_s=10.0)
    with Mounted(Cluster(root, "shm"), root, settings) as m:
        (m.point / "f").write_bytes(b"x" * 10)
        assert (m.point / "f").read_bytes() == b"x" * 10
    found = re.search(r"(\d+) of (\d+) session spins found the next request", m.log.read_text())
    assert found is not None, m.log.read_text()
    assert 0 <= int(found[1]) <= int(found[2]) and int(found[2]) > 0


def test_a_bad_spin_is_refused_naming_it(tmp_path_factory: pytest.TempPathFactory) -> None:
    with pytest.raises(ConfigError, match=r"^--session-spin: 1001 is not between 0 and 1000"):
        MountSettings.checked(session_spin_us=1001)
    root = tmp_path_factory.mktemp("fuse-spin-bad")
    # The engine checks it too, before reading the registry.
    with pytest.raises(ValueError, match=r"^session_spin"):
        benchfs_native.serve_mount(str(root), str(root), session_spin_us=1001)
    with pytest.raises(ValueError, match="session_spin_us must be 0 or more"):
        benchfs_native.serve_mount(str(root), str(root), session_spin_us=-1)
