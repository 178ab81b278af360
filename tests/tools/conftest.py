"""Fixtures for the tool tests: a real loop device, and a real slow disk (loop device + cgroup
throttle)."""

from fixtures.loopdisk import loop_disk_factory
from fixtures.slowdisk import slow_disk_factory

__all__ = ["loop_disk_factory", "slow_disk_factory"]
