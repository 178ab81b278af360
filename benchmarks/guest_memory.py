"""The guest's free-page reporting, paused for the time of a benchmark.

A virtual machine whose balloon reports free pages (``virtio_balloon`` with
free page reporting, ``/sys/module/page_reporting``) hands the memory a run
frees back to its host within seconds, and the next run's page-cache and
tmpfs writes fault it in again from the host, at a fraction of the speed
(docs/perf-log/cluster.md, "The host's page faults"). Setting
``page_reporting_order`` above the buddy allocator's largest order stops the
reporting: no free block is that large.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPORTING_ORDER = Path("/sys/module/page_reporting/parameters/page_reporting_order")


def _orders() -> int:
    """How many orders the buddy allocator has: the counts in a line of
    ``/proc/buddyinfo`` (one per order, 0 upwards, after the zone's name)."""
    first = Path("/proc/buddyinfo").read_text().splitlines()[0]
    return sum(field.isdigit() for field in first.split(",", 1)[1].split())


@contextmanager
def free_page_reporting_paused() -> Iterator[str]:
    """Stop the guest reporting free pages to its host while the block runs,
    where it does and may be stopped; yields what was done."""
    try:
        before = REPORTING_ORDER.read_text().strip()
    except OSError:
        yield "absent"
        return
    try:
        REPORTING_ORDER.write_text(str(_orders()))
    except OSError as error:
        yield f"on (could not pause it: {error.strerror})"
        return
    try:
        yield f"paused (page_reporting_order {before} -> {_orders()}, restored after)"
    finally:
        REPORTING_ORDER.write_text(before)
