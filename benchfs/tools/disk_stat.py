"""A whole disk's completed requests, from ``/sys/class/block/<disk>/stat``.

The kernel counts requests as the disk received them: after the block layer
split what exceeded the disk's limits (``max_segments``,
``max_sectors_kb``) and merged what lay adjacent. So bytes over requests
tells how the I/O a tool asked for reached the disk. Every process's I/O
to that disk counts, not only the tool's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SECTOR = 512  # the unit of the stat file, whatever the disk's own sector size


@dataclass(frozen=True)
class DiskCounts:
    """Requests completed and bytes moved, per direction, since boot or over a span."""

    reads: int
    read_bytes: int
    writes: int
    written_bytes: int

    def __sub__(self, before: DiskCounts) -> DiskCounts:
        return DiskCounts(
            self.reads - before.reads,
            self.read_bytes - before.read_bytes,
            self.writes - before.writes,
            self.written_bytes - before.written_bytes,
        )

    def requests(self, writing: bool) -> int:
        return self.writes if writing else self.reads

    def mean_request_KiB(self, writing: bool) -> float | None:
        """Mean size of a request in that direction, in KiB; None without a request."""
        count = self.requests(writing)
        moved = self.written_bytes if writing else self.read_bytes
        return moved / count / 1024 if count > 0 else None


def read_disk_counts(disk: str, sys: Path = Path("/sys")) -> DiskCounts | None:
    """The counts of ``disk`` (a name such as ``vda``); None where it has no stat file."""
    try:
        fields = (sys / "class" / "block" / disk / "stat").read_text().split()
        # reads, reads merged, sectors read, ms; writes, merged, sectors written, ms; ...
        reads, _, read_sectors, _, writes, _, written_sectors = (int(f) for f in fields[:7])
    except (OSError, ValueError):
        return None
    return DiskCounts(reads, read_sectors * SECTOR, writes, written_sectors * SECTOR)
