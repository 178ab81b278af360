"""A file unlinked or renamed over while open through the mount stays
readable and writable through its descriptors until the last close, then
its data is removed (the mount's "silly rename", docs/MOUNT.md)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from mount_support import Mounted, removed_once_released, wait_for

pytestmark = pytest.mark.core_claim

HIDDEN_PREFIX = ".benchfs-unlinked-"


def data_objects(mounted: Mounted, ino: int) -> list[Path]:
    """The daemons' backing files of the file whose id is ``ino``."""
    tag = f"{ino:016x}"
    return [p for p in (mounted.cluster.root / "data").rglob("*") if tag in p.name]


def written(path: Path, data: bytes) -> int:
    """Creates ``path`` holding ``data``; returns a read-write descriptor on it."""
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    assert os.pwrite(fd, data, 0) == len(data)
    return fd


def test_an_unlinked_open_file_stays_usable_until_the_last_close(
    mounted: Mounted, mnt: Path
) -> None:
    d = mnt / "open-unlink"
    d.mkdir()
    path = d / "victim"
    data = bytes(range(256)) * 1024
    fd = written(path, data)
    second = os.open(path, os.O_RDONLY)
    try:
        ino = os.fstat(fd).st_ino
        assert data_objects(mounted, ino), "the written file has no data object"
        path.unlink()

        assert not path.exists()
        with pytest.raises(FileNotFoundError):
            os.stat(path)
        assert os.listdir(d) == []
        assert os.pread(fd, len(data), 0) == data
        assert os.pwrite(fd, b"after unlink", 3) == 12
        assert os.pread(second, 12, 3) == b"after unlink"
        st = os.fstat(fd)
        assert st.st_size == len(data)
        assert st.st_nlink == 0
        os.ftruncate(fd, 100)
        assert os.fstat(second).st_size == 100

        # The name is free again for a new file of its own.
        path.write_bytes(b"new")
        assert os.pread(fd, 3, 0) == data[:3]
        assert sorted(os.listdir(d)) == ["victim"]
        os.close(fd)
        fd = -1
        assert os.pread(second, 5, 3) == b"after"
        assert data_objects(mounted, ino)
    finally:
        if fd >= 0:
            os.close(fd)
        os.close(second)
    wait_for(lambda: not data_objects(mounted, ino), "removal of the unlinked file's data")
    assert path.read_bytes() == b"new"
    path.unlink()
    removed_once_released(d.rmdir, "removal of open-unlink/")


def test_a_file_renamed_over_while_open_stays_usable(mounted: Mounted, mnt: Path) -> None:
    old = mnt / "rename-over-target"
    new = mnt / "rename-over-source"
    fd = written(old, b"old contents")
    try:
        ino = os.fstat(fd).st_ino
        new.write_bytes(b"replacement")
        os.rename(new, old)

        assert old.read_bytes() == b"replacement"
        assert not new.exists()
        assert os.pread(fd, 12, 0) == b"old contents"
        assert os.pwrite(fd, b"OLD", 0) == 3
        assert os.pread(fd, 12, 0) == b"OLD contents"
        assert os.fstat(fd).st_ino == ino
        assert os.stat(old).st_ino != ino
        assert not [n for n in os.listdir(mnt) if n.startswith(HIDDEN_PREFIX)]
    finally:
        os.close(fd)
    wait_for(lambda: not data_objects(mounted, ino), "removal of the replaced file's data")
    assert old.read_bytes() == b"replacement"
    old.unlink()


def test_a_hidden_name_is_found_by_name_but_not_listed_nor_removable(
    mounted: Mounted, mnt: Path
) -> None:
    path = mnt / "hidden-lookup"
    fd = written(path, b"x")
    try:
        ino = os.fstat(fd).st_ino
        path.unlink()
        hidden = mnt / f"{HIDDEN_PREFIX}{ino:016x}"
        assert hidden.name not in os.listdir(mnt)
        assert os.stat(hidden).st_ino == ino
        with pytest.raises(OSError) as busy:
            hidden.unlink()
        assert busy.value.errno == errno.EBUSY
    finally:
        os.close(fd)
    wait_for(lambda: not hidden.exists(), "removal of the hidden name at the last close")
    # The record goes first, then the data objects on every daemon.
    wait_for(lambda: not data_objects(mounted, ino), "removal of the hidden file's data")


def test_unlinking_a_closed_file_removes_its_data(mounted: Mounted, mnt: Path) -> None:
    """The kernel sends a file's release after close() returns, in the
    background: an unlink that overtakes it finds the file still open and
    hides it until that release, so the test waits for the outcome."""
    path = mnt / "closed-unlink"
    fd = written(path, b"y" * 4096)
    ino = os.fstat(fd).st_ino
    os.close(fd)
    assert data_objects(mounted, ino)
    path.unlink()
    assert not path.exists()
    wait_for(lambda: not data_objects(mounted, ino), "removal of the closed file's data")
    wait_for(
        lambda: not [n for n in os.listdir(mnt) if n.startswith(HIDDEN_PREFIX)],
        "no hidden name left",
    )


def test_a_directory_holding_an_open_unlinked_file_is_not_empty_until_the_close(
    mounted: Mounted, mnt: Path
) -> None:
    d = mnt / "rmdir-while-open"
    d.mkdir()
    fd = written(d / "f", b"z")
    try:
        ino = os.fstat(fd).st_ino
        (d / "f").unlink()
        assert os.listdir(d) == []
        with pytest.raises(OSError) as not_empty:
            d.rmdir()
        assert not_empty.value.errno == errno.ENOTEMPTY
    finally:
        os.close(fd)
    wait_for(lambda: not data_objects(mounted, ino), "removal at the last close")
    d.rmdir()
    assert not d.exists()
