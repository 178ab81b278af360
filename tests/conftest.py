"""Shared pytest fixtures."""

from __future__ import annotations

import os

import pytest


def is_root() -> bool:
    return os.geteuid() == 0


requires_root = pytest.mark.skipif(not is_root(), reason="needs root (loop devices, cgroups)")
