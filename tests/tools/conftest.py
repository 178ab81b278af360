"""Fixtures for the tool tests: a real slow disk (loop device + blkio throttle)."""

from fixtures.slowdisk import slow_disk_factory

__all__ = ["slow_disk_factory"]
