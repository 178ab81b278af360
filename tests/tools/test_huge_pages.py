"""fio's buffers on huge pages: the pool read from meminfo, the check before a
run, and a real fio run on them."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchfs.errors import ToolError
from benchfs.tools.fio import FioJob, fio_command, run_fio
from benchfs.tools.huge_pages import read_pool, require_huge_pages

NR_HUGEPAGES = Path("/proc/sys/vm/nr_hugepages")


def _meminfo(tmp_path: Path, free: int) -> Path:
    path = tmp_path / "meminfo"
    path.write_text(
        "MemTotal:       24551220 kB\nHugePages_Total:      16\n"
        f"HugePages_Free:       {free}\nHugePages_Rsvd:        0\nHugepagesize:       2048 kB\n"
    )
    return path


def test_the_pool_is_read_from_meminfo(tmp_path: Path) -> None:
    pool = read_pool(_meminfo(tmp_path, 12))
    assert (pool.free_pages, pool.page_bytes, pool.free_bytes) == (12, 2 << 20, 24 << 20)
    assert read_pool().page_bytes > 0  # this machine's own


def test_too_few_free_pages_are_named_with_what_is_needed(tmp_path: Path) -> None:
    meminfo = _meminfo(tmp_path, 3)
    # Two processes of 4 x 1 MiB: 2 pages each, and one each for fio's alignment.
    require_huge_pages([4 << 20], meminfo)
    with pytest.raises(ToolError) as error:
        require_huge_pages([4 << 20, 4 << 20], meminfo)
    assert str(error.value) == (
        f"fio on huge pages needs 6 free huge pages of 2 MiB, and {meminfo} has 3 free "
        "(as root, add 3 to vm.nr_hugepages)"
    )
    broken = tmp_path / "broken"
    broken.write_text("MemTotal: 1 kB\n")
    with pytest.raises(ToolError, match=f"{broken} names no HugePages_Free"):
        read_pool(broken)


def test_the_job_asks_fio_for_huge_pages(tmp_path: Path) -> None:
    job = FioJob("w", "write", "1M", 4, "8M", huge_pages=True)
    assert "--iomem=mmaphuge" in fio_command([job], tmp_path)
    assert "--iomem=mmaphuge" not in fio_command([FioJob("w", "write", "1M", 4, "8M")], tmp_path)
    assert job.buffer_bytes == 4 << 20 and job.memory == "huge pages (iomem=mmaphuge)"


@pytest.fixture
def huge_pages_reserved() -> Iterator[int]:
    """8 more pages in the kernel's pool for the test, the old size put back after."""
    before = int(NR_HUGEPAGES.read_text())
    NR_HUGEPAGES.write_text(f"{before + 8}\n")
    try:
        if read_pool().free_pages < 8:
            pytest.fail("the kernel gave the pool fewer than 8 more huge pages")
        yield before
    finally:
        NR_HUGEPAGES.write_text(f"{before}\n")


@pytest.mark.root
@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_fio_runs_on_huge_pages_and_is_stopped_before_it_starts_without_them(
    tmp_path: Path, huge_pages_reserved: int
) -> None:
    job = FioJob("w", "write", "1M", 4, "8M", huge_pages=True)
    report = run_fio([job], tmp_path, timeout_s=120)
    assert report.jobs[0].write.io_bytes == 8 << 20
    # More than the pool holds: refused before fio starts, with the figures.
    greedy = FioJob("g", "write", "1M", 64, "8M", numjobs=4, huge_pages=True)
    with pytest.raises(ToolError, match="fio on huge pages needs 132 free huge pages"):
        run_fio([greedy], tmp_path, timeout_s=120)
    assert not (tmp_path / "g.0.0").exists()
