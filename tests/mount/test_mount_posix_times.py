"""Times, link counts and the errnos POSIX names, through the mount: a
directory's mtime and ctime follow its entries, a file's ctime its
changes, a directory's nlink its subdirectories."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

#: A time long past (2001), set on a directory before each step.
PAST = 1_000_000_000 * 1_000_000_000


def changes_times(step: Callable[[], object], *dirs: Path) -> None:
    """``step`` moves the mtime and ctime of every one of ``dirs``."""
    before = {}
    for d in dirs:
        os.utime(d, ns=(PAST, PAST))
        before[d] = os.stat(d).st_ctime_ns
    step()
    for d in dirs:
        st = os.stat(d)
        assert st.st_mtime_ns > PAST, d
        assert st.st_ctime_ns > before[d], d


def test_every_entry_change_moves_its_directorys_mtime_and_ctime(mnt: Path) -> None:
    top = mnt / "parent-times"
    other = top / "other"
    top.mkdir()
    other.mkdir()
    (top / "seed").write_bytes(b"s")
    steps: list[tuple[str, Callable[[], object], tuple[Path, ...]]] = [
        ("create", lambda: (top / "f").write_bytes(b"f"), (top,)),
        ("mkdir", lambda: (top / "sub").mkdir(), (top,)),
        ("mknod", lambda: os.mknod(top / "node", 0o644), (top,)),
        ("mkfifo", lambda: os.mkfifo(top / "fifo"), (top,)),
        ("symlink", lambda: os.symlink("f", top / "l"), (top,)),
        ("link", lambda: os.link(top / "f", top / "f2"), (top,)),
        ("unlink", lambda: os.unlink(top / "f2"), (top,)),
        ("rename", lambda: os.rename(top / "f", other / "f"), (top, other)),
        ("rename over", lambda: os.rename(top / "seed", other / "f"), (top, other)),
        ("rename within", lambda: os.rename(top / "node", top / "node2"), (top,)),
        ("rmdir", lambda: (top / "sub").rmdir(), (top,)),
    ]
    for what, step, dirs in steps:
        try:
            changes_times(step, *dirs)
        except AssertionError as e:
            raise AssertionError(f"{what}: {e}") from e


def test_a_files_ctime_follows_its_changes(mnt: Path) -> None:
    top = mnt / "file-ctime"
    top.mkdir()
    f = top / "f"
    f.write_bytes(b"0123456789")
    steps: list[tuple[str, Callable[[], object]]] = [
        ("chmod", lambda: os.chmod(f, 0o600)),
        ("chown", lambda: os.chown(f, 1234, 1234)),
        ("link", lambda: os.link(f, top / "g")),
        ("unlink of another name", lambda: os.unlink(top / "g")),
        ("rename", lambda: os.rename(f, top / "h")),
        ("truncate", lambda: os.truncate(top / "h", 3)),
        ("write", lambda: (top / "h").write_bytes(b"new")),
    ]
    for what, step in steps:
        path = f if f.exists() else top / "h"
        before = os.stat(path).st_ctime_ns
        step()
        path = f if f.exists() else top / "h"
        assert os.stat(path).st_ctime_ns > before, what


def test_a_directorys_nlink_is_two_and_its_subdirectories(mnt: Path) -> None:
    top = mnt / "nlink"
    top.mkdir()
    assert os.stat(top).st_nlink == 2
    for i in range(3):
        (top / f"d{i}").mkdir()
    (top / "file").write_bytes(b"")
    os.symlink("d0", top / "link")
    assert os.stat(top).st_nlink == 5, "files and links are not counted"
    (top / "d1").rmdir()
    assert os.stat(top).st_nlink == 4
    with pytest.raises(FileExistsError):
        (top / "d0").mkdir()
    assert os.stat(top).st_nlink == 4


def test_the_errnos_posix_names(mnt: Path) -> None:
    top = mnt / "errnos"
    top.mkdir()
    (top / "file").write_bytes(b"x")
    (top / "dir").mkdir()
    (top / "full").mkdir()
    (top / "full" / "x").write_bytes(b"")
    os.symlink("loop2", top / "loop1")
    os.symlink("loop1", top / "loop2")
    cases: list[tuple[str, Callable[[], object], int]] = [
        ("rename a dir over a file", lambda: os.rename(top / "dir", top / "file"), errno.ENOTDIR),
        ("rename a file over a dir", lambda: os.rename(top / "file", top / "dir"), errno.EISDIR),
        ("rmdir of a file", lambda: os.rmdir(top / "file"), errno.ENOTDIR),
        ("rmdir of a non-empty dir", lambda: os.rmdir(top / "full"), errno.ENOTEMPTY),
        ("unlink of a dir", lambda: os.unlink(top / "dir"), errno.EISDIR),
        ("a file as a path component", lambda: os.stat(top / "file" / "x"), errno.ENOTDIR),
        ("create under a file", lambda: (top / "file" / "x").write_bytes(b""), errno.ENOTDIR),
        ("mkdir over a file", lambda: (top / "file").mkdir(), errno.EEXIST),
        ("too many links", lambda: os.stat(top / "loop1"), errno.ELOOP),
        ("link of a dir", lambda: os.link(top / "dir", top / "dir2"), errno.EPERM),
    ]
    for what, call, want in cases:
        with pytest.raises(OSError) as info:
            call()
        assert info.value.errno == want, what
