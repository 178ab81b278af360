"""The kernel's pool of huge pages, for fio's buffers (``iomem=mmaphuge``).

The engine's buffers lie on transparent huge pages, so each 1 MiB request
reaches the disk whole; fio's default buffers lie on 4 KiB pages, and a
direct request over them is split where the device's segment limit falls
(527 KiB a request measured on vda). fio takes huge pages only from the
hugetlb pool (``MAP_HUGETLB``), which the administrator fills
(``vm.nr_hugepages``); a benchmark never resizes it on a shared node.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchfs.errors import ToolError

MEMINFO = Path("/proc/meminfo")


@dataclass(frozen=True)
class HugePagePool:
    free_pages: int
    page_bytes: int

    @property
    def free_bytes(self) -> int:
        return self.free_pages * self.page_bytes

    def pages_for(self, nbytes: int) -> int:
        return -(-nbytes // self.page_bytes)


def read_pool(meminfo: Path = MEMINFO) -> HugePagePool:
    """HugePages_Free and Hugepagesize from ``meminfo``."""
    fields: dict[str, int] = {}
    try:
        text = meminfo.read_text()
    except OSError as error:
        raise ToolError(f"cannot read {meminfo}: {error.strerror}") from None
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        words = rest.split()
        if key in ("HugePages_Free", "Hugepagesize") and words and words[0].isdigit():
            fields[key] = int(words[0]) * (1024 if key == "Hugepagesize" else 1)
    if "HugePages_Free" not in fields or "Hugepagesize" not in fields:
        raise ToolError(f"{meminfo} names no HugePages_Free and Hugepagesize")
    return HugePagePool(fields["HugePages_Free"], fields["Hugepagesize"])


def require_huge_pages(buffers: list[int], meminfo: Path = MEMINFO) -> None:
    """Fail, naming the figures, unless the pool holds ``buffers`` (bytes a fio
    process, each rounded up to whole huge pages) at once."""
    pool = read_pool(meminfo)
    # One more page a process: fio aligns its buffer inside the mapping.
    needed = sum(pool.pages_for(nbytes) + 1 for nbytes in buffers)
    if needed > pool.free_pages:
        mib = pool.page_bytes // (1 << 20) or 1
        raise ToolError(
            f"fio on huge pages needs {needed} free huge pages of {mib} MiB, and {meminfo} "
            f"has {pool.free_pages} free (as root, add {needed - pool.free_pages} to "
            "vm.nr_hugepages)"
        )
