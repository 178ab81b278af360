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


def in_session(sid: int) -> list[int]:
    """Live processes of session ``sid`` (a process started with ``start_new_session``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone while walking
            continue
        # After the command name in parentheses: state, ppid, pgrp, session.
        if int(stat.rpartition(")")[2].split()[3]) == sid and alive(int(entry.name)):
            found.append(int(entry.name))
    return found
