"""A path walk through the strict mount: the getattr the kernel sends right after
a lookup of the same node is answered with that lookup's attributes, and what
another client changes is still seen at the next call (docs/MOUNT.md, "Strict
attributes and a path walk")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mount_support import Mounted

pytestmark = pytest.mark.core_claim

DEPTH = 5  # components of the path stat'ed, under the mount point
STATS = 50


def daemon_stats(mounted: Mounted) -> int:
    """Stat RPCs served by every daemon so far."""
    with mounted.cluster.client(name="counter") as c:
        return sum(
            int(c.stats(node)["requests"].get("stat", 0))
            for node in range(len(mounted.cluster.names))
        )


def test_a_walks_getattr_after_its_lookup_asks_no_daemon(mnt: Path, mounted: Mounted) -> None:
    deep = mnt / "walk"
    for level in range(DEPTH - 2):
        deep = deep / f"d{level}"
    deep.mkdir(parents=True)
    (deep / "f").write_bytes(b"")
    target = deep / "f"
    before = daemon_stats(mounted)
    for _ in range(STATS):
        os.stat(target)
    asked = daemon_stats(mounted) - before
    # Without the reuse each stat asks the root's attributes, then a lookup and a
    # getattr per component: 2 * DEPTH + 1. With it, the getattrs that follow
    # their lookup within the window ask nothing: at least one of them here.
    assert STATS * (DEPTH + 1) <= asked < STATS * (2 * DEPTH + 1)


def test_another_clients_changes_are_seen_at_the_next_call(mnt: Path, mounted: Mounted) -> None:
    top = mnt / "walk-changes"
    (top / "d").mkdir(parents=True)
    (top / "d" / "f").write_bytes(b"one")
    os.chmod(top / "d", 0o755)
    for _ in range(3):
        assert os.stat(top / "d").st_mode & 0o777 == 0o755
    with mounted.cluster.client(name="elsewhere") as c:
        c.setattr("walk-changes/d", mode=0o700)
        c.setattr("walk-changes/d/f", mode=0o604)
    assert os.stat(top / "d").st_mode & 0o777 == 0o700
    assert os.stat(top / "d" / "f").st_mode & 0o777 == 0o604
    with mounted.cluster.client(name="elsewhere") as c:
        c.unlink("walk-changes/d/f")
    with pytest.raises(FileNotFoundError):
        os.stat(top / "d" / "f")
