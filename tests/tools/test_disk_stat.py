"""A disk's completed requests, read from its sysfs stat file: this machine's own disk
under real O_DIRECT I/O, and a stat file laid out as the kernel writes it."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import pytest

from benchfs.tools.disk_stat import DiskCounts, read_disk_counts
from benchfs.tools.fsinfo import inspect_directory

MiB = 1024 * 1024


def test_the_stat_file_is_read_in_sectors_of_512_bytes(tmp_path: Path) -> None:
    stat = tmp_path / "class" / "block" / "vdz" / "stat"
    stat.parent.mkdir(parents=True)
    # reads, merged, sectors, ms; writes, merged, sectors, ms; in flight, ...
    stat.write_text("  10 2 2048 5   4 1 8192 7   0 12 12 0 0 0 0 0 0\n")
    counts = read_disk_counts("vdz", sys=tmp_path)
    assert counts == DiskCounts(reads=10, read_bytes=MiB, writes=4, written_bytes=4 * MiB)
    assert counts.mean_request_KiB(writing=True) == 1024
    assert counts.mean_request_KiB(writing=False) == pytest.approx(102.4)


def test_a_span_without_requests_has_no_mean_and_a_missing_disk_no_counts(
    tmp_path: Path,
) -> None:
    counts = DiskCounts(3, 4096, 5, 8192)
    span = counts - counts
    assert span.requests(writing=True) == 0 and span.mean_request_KiB(writing=True) is None
    assert read_disk_counts("nosuchdisk", sys=tmp_path) is None


def test_direct_writes_reach_the_disk_under_the_directory(tmp_path: Path) -> None:
    disks = inspect_directory(tmp_path).disks
    if len(disks) != 1:
        pytest.skip(f"{tmp_path} is not on one disk ({disks or 'none'})")
    before = read_disk_counts(disks[0])
    assert before is not None
    aligned = mmap.mmap(-1, 4 * MiB)  # page-aligned, as O_DIRECT needs
    aligned.write(os.urandom(4 * MiB))
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600)
    try:
        assert os.pwrite(fd, aligned, 0) == 4 * MiB
        os.fsync(fd)
    finally:
        os.close(fd)
    after = read_disk_counts(disks[0])
    assert after is not None
    span = after - before
    # Every byte written went to this disk (other processes may add more).
    assert span.written_bytes >= 4 * MiB and span.writes >= 1
