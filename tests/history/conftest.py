"""Fixtures for the history's tests."""

from __future__ import annotations

import pytest
from fixtures.slowdisk import slow_disk_factory

__all__ = ["slow_disk_factory"]

# Wider than any step a run prints: each stays on one line of its output.
STEP_COLUMNS = "1000"


@pytest.fixture
def whole_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs started by the test print each step on one line (rich wraps at COLUMNS)."""
    monkeypatch.setenv("COLUMNS", STEP_COLUMNS)
