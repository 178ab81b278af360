"""Directories a run creates are this user's only; one another user owns is refused."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from benchfs.cluster.private import make_private_dir, make_user_root, user_temp_root
from benchfs.errors import BenchfsError

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory away needs root")


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_created_with_parents_mode_0700_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        made = make_private_dir(tmp_path / "a" / "b" / "c")
    finally:
        os.umask(previous)
    assert made.is_dir()
    assert [mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3


def test_claim_refuses_an_existing_directory(tmp_path: Path) -> None:
    make_private_dir(tmp_path / "claim", exist_ok=False)
    with pytest.raises(FileExistsError):
        make_private_dir(tmp_path / "claim", exist_ok=False)


@needs_root
def test_a_directory_of_another_user_is_refused_by_name(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    taken.chmod(0o777)  # anyone could have made it: as in /tmp
    os.chown(taken, NOBODY, NOBODY)
    with pytest.raises(BenchfsError, match=f"{taken}: owned by uid {NOBODY}, not by you"):
        make_private_dir(taken / "run")
    assert not (taken / "run").exists()


def test_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(BenchfsError, match="link: is a symbolic link"):
        make_private_dir(tmp_path / "link")


@needs_root
def test_a_user_directory_taken_first_in_tmp_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    root = user_temp_root()
    assert root == tmp_path / f"benchfs-{os.geteuid()}"
    root.mkdir(mode=0o777)
    os.chown(root, NOBODY, NOBODY)
    with pytest.raises(BenchfsError, match=f"{root}: owned by uid {NOBODY}"):
        make_private_dir(root / "benchfs-x-g0" / "node0")
    assert list(root.iterdir()) == []


def test_this_users_directory_is_made_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    root = user_temp_root()
    root.mkdir(mode=0o755)
    make_user_root(root)
    assert mode(root) == 0o700


@needs_root
def test_a_group_directory_nobody_else_could_claim_is_trusted(tmp_path: Path) -> None:
    group = tmp_path / "project"
    group.mkdir(mode=0o2770)
    os.chown(group, NOBODY, NOBODY)
    made = make_private_dir(group / "results")
    assert mode(made) == 0o700


@needs_root
def test_the_walk_follows_links_as_the_kernel_does(tmp_path: Path) -> None:
    """Relative and absolute links and ``..`` are resolved component by
    component: this user's links are followed, one of another user's is
    refused wherever the walk meets it, also through ``..`` and a chain."""
    from benchfs.cluster.private import check_path

    real = tmp_path / "real"
    (real / "deep").mkdir(parents=True)
    os.symlink("real/deep", tmp_path / "mine")  # relative, this user's
    check_path(tmp_path / "mine" / ".." / "deep" / "new")
    check_path(tmp_path / "mine" / "deep-too")
    theirs = tmp_path / "theirs"
    os.symlink(str(real), theirs)
    os.lchown(theirs, NOBODY, NOBODY)
    os.symlink("theirs/deep", tmp_path / "chain")  # mine, but through theirs
    for path in (theirs / "x", tmp_path / "chain" / "x", real / ".." / "theirs" / "x"):
        with pytest.raises(BenchfsError) as error:
            check_path(path)
        assert str(error.value) == (
            f"{theirs}: a symbolic link owned by uid {NOBODY}, not by you "
            f"(uid {os.geteuid()}): refusing to follow it"
        )
    loop = tmp_path / "loop"
    os.symlink("loop", loop)
    with pytest.raises(BenchfsError, match="more than 40 symbolic links"):
        check_path(loop / "x")
