"""Fixtures for the health tests: a real slow disk (loop device + cgroup throttle)."""

from fixtures.slowdisk import slow_disk_factory

__all__ = ["slow_disk_factory"]
