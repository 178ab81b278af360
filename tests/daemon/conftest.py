"""Fixtures for the daemon's tests."""

from __future__ import annotations

from fixtures.slowdisk import slow_disk_factory

__all__ = ["slow_disk_factory"]
