"""Histories that cannot be written, made for real: a SQLite file that another
process holds locked, one that is read-only, one cut short, one of a newer schema."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchfs.history.model import NodeRow, RunRecord, RunRow
from benchfs.history.store import History, Location

KINDS = ("locked", "read-only", "truncated", "newer schema")
# What the one-line error says for each.
REASONS = {
    "locked": "database is locked",
    "read-only": "readonly database",
    "truncated": "truncated",
    "newer schema": "schema version 99, written by a newer benchfs",
}


def record(uid: str = "a", node: str = "n0", started: str = "2026-12-01T10:00:00Z") -> RunRecord:
    """A small run of one node."""
    run = RunRow(
        uid=uid, kind="run", cluster="c", label="run", results_dir=f"/r/{uid}", command="benchfs",
        started_at=started, ended_at=None, status="completed", error=None,
        workload_key="k", node_count=1, benchfs_version="0",
    )  # fmt: skip
    return RunRecord(run=run, nodes=[NodeRow(node=node, role="used", flagged=False)])


def filled(path: Path, runs: int = 12) -> Path:
    """A real history at ``path`` with ``runs`` runs (several pages of SQLite)."""
    history = History(Location(path=path))
    for index in range(runs):
        history.write(record(uid=f"run{index}", node=f"node{index % 7}"))
    return path


@contextmanager
def damaged(path: Path, kind: str) -> Iterator[Path]:
    """The history at ``path`` made ``kind``; undone on leaving (the lock released,
    the file writable again)."""
    filled(path)
    if kind == "truncated":
        with path.open("r+b") as handle:
            handle.truncate(path.stat().st_size // 2)
        yield path
    elif kind == "newer schema":
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
        yield path
    elif kind == "read-only":
        with read_only(path):
            yield path
    elif kind == "locked":
        with locked(path):
            yield path
    else:
        raise ValueError(kind)


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Root writes a file whatever its mode: then the file is made immutable."""
    if os.geteuid() == 0 and shutil.which("chattr"):
        subprocess.run(["chattr", "+i", str(path)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        path.chmod(0o444)
        path.parent.chmod(0o555)
        try:
            yield
        finally:
            path.parent.chmod(0o755)
            path.chmod(0o644)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Another process holds the database's exclusive lock until this ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)


_HOLD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""
