"""`benchfs_native.find_posix_level`: IO500's find over a real directory
tree, level by level, against what ``os.walk`` and ``os.lstat`` say of the
same tree; pfind's reading of ``-name`` (``.`` itself, matched anywhere);
errors naming the directory or the pattern."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import benchfs_native as bn

SIZE = 3901


def make_tree(root: Path, old_ns: int) -> None:
    for rank in range(3):
        d = root / "io500" / "mdtest-easy" / f"rank.{rank}" / "deeper"
        d.mkdir(parents=True)
        for i in range(120):
            (d.parent / f"file.mdtest.{rank}.{i}").write_bytes(b"x" * (SIZE if i % 3 else 7))
    hard = root / "io500" / "mdtest-hard"
    hard.mkdir()
    for i in range(120):
        (hard / f"file.mdtest.{i % 4}.{i}").write_bytes(b"y" * SIZE)
    (hard / "old.01").write_bytes(b"y" * SIZE)  # all but its time
    os.utime(hard / "old.01", ns=(old_ns, old_ns))
    (hard / "x01y").symlink_to("file.mdtest.0.0")  # its own size, not the target's
    (hard / "a0.1").write_bytes(b"z" * SIZE)  # '.' is itself: not "*01*"


def expected(tree: Path, newer_than_ns: int) -> tuple[int, int]:
    scanned = found = 0
    for top, _, files in os.walk(tree):
        scanned += len(files)
        for name in files:
            if re.search(".*01.*", name):
                st = os.lstat(Path(top) / name)
                found += st.st_size == SIZE and st.st_mtime_ns > newer_than_ns
    return scanned, found


def test_a_walk_level_by_level_finds_what_the_tree_holds(tmp_path: Path) -> None:
    stamp_ns = os.stat(tmp_path).st_mtime_ns - 10**9
    make_tree(tmp_path, old_ns=stamp_ns - 10**9)
    scanned = found = levels = 0
    level = ["io500"]
    while level:
        level, files, matched = bn.find_posix_level(
            directory=str(tmp_path), directories=level, name="*01*", size=SIZE,
            newer_than_ns=stamp_ns,
        )  # fmt: skip
        scanned, found, levels = scanned + files, found + matched, levels + 1
        assert all((tmp_path / d).is_dir() for d in level)
    want = expected(tmp_path / "io500", stamp_ns)
    assert (scanned, found) == want and found == 3 + 1 and levels == 4
    # Newer than nothing: the old files count as well.
    hard = "io500/mdtest-hard"
    everything = bn.find_posix_level(directory=str(tmp_path), directories=[hard], name="*01*",
                                     size=SIZE, newer_than_ns=0)  # fmt: skip
    assert everything == ([], *expected(tmp_path / hard, 0))
    assert everything[2] > expected(tmp_path / hard, stamp_ns)[1]


def test_a_missing_directory_and_a_bad_pattern_are_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="gone"):
        bn.find_posix_level(directory=str(tmp_path), directories=["gone"], name="*01*",
                            size=SIZE, newer_than_ns=0)  # fmt: skip
    with pytest.raises(ValueError, match=r"name.*\*\[01\*"):
        bn.find_posix_level(directory=str(tmp_path), directories=["."], name="*[01*",
                            size=SIZE, newer_than_ns=0)  # fmt: skip
