"""Helpers for tests that start real processes."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """True if ``pid`` runs (a zombie awaiting its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # gone before or while reading
        return False
    state = stat.rpartition(")")[2].split()[0]
    return state not in ("Z", "X")
