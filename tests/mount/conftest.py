"""A FUSE mount over four real daemons (64 KiB chunks, so small files cross
chunk borders)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_cluster import Cluster
from mount_support import Mounted, skip_without_fuse

from benchfs.mount.settings import MountSettings


@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mounted]:
    """One mount for a module's tests."""
    skip_without_fuse()
    root = tmp_path_factory.mktemp("fuse-mount")
    with Mounted(Cluster(root, "shm"), root, MountSettings(rpc_deadline_s=10.0)) as m:
        yield m


@pytest.fixture
def mnt(mounted: Mounted) -> Path:
    return mounted.point
