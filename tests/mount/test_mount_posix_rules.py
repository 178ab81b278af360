"""POSIX's rules on an ``--allow-other`` mount, as root and as another user
(uid 65534 through ``setpriv``): the set-user-ID, set-group-ID and sticky
bits, who may chmod, chown and remove what, and names too long."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_cluster import Cluster
from mount_support import NOBODY, Mounted, python_as_nobody, skip_without_fuse

from benchfs.mount.settings import MountSettings


@pytest.fixture(scope="module")
def shared_mount(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mounted]:
    skip_without_fuse()
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    root = tmp_path_factory.mktemp("posix-rules")
    settings = MountSettings(rpc_deadline_s=10.0, allow_other=True)
    with Mounted(Cluster(root, "shm"), root, settings) as m:
        yield m


@pytest.fixture
def work(shared_mount: Mounted, request: pytest.FixtureRequest) -> Path:
    """A directory of the mount, mode 0777, for one test."""
    path = shared_mount.point / request.node.name
    path.mkdir()
    path.chmod(0o777)
    return path


def as_nobody(cwd: Path, script: str) -> dict[str, int]:
    """Runs a Python ``script`` as uid 65534 (no other group), started in
    ``cwd`` (the directories above the mount are private to root). The
    script fills ``out`` with an errno (0: it worked) per try; that is
    what this returns."""
    runner = f"""
import errno, json, os, sys
out = {{}}
def attempt(what, call):
    try:
        call()
        out[what] = 0
    except OSError as e:
        out[what] = e.errno
{script}
print(json.dumps(out))
"""
    done = python_as_nobody(cwd, runner)
    assert done.returncode == 0, done.stderr
    got: dict[str, int] = json.loads(done.stdout)
    return got


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_chmod_and_create_keep_sticky_setuid_and_setgid(work: Path) -> None:
    world = work / "world"
    world.mkdir()
    os.chmod(world, 0o1777)
    assert mode_of(world) == 0o1777
    f = work / "f"
    f.write_bytes(b"x")
    for bits in (0o4755, 0o2755, 0o6711, 0o1644, 0o644):
        os.chmod(f, bits)
        assert mode_of(f) == bits, oct(bits)
    old = os.umask(0)
    try:
        os.close(os.open(work / "made", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o6755))
        os.mkdir(work / "madedir", 0o3775)
    finally:
        os.umask(old)
    assert mode_of(work / "made") == 0o6755
    # mkdir(2) keeps sticky; Linux never gives set-group-ID from its mode.
    assert mode_of(work / "madedir") == 0o1775
    # A rename moves the record with its bits.
    os.rename(work / "made", work / "moved")
    assert mode_of(work / "moved") == 0o6755


def test_a_sticky_directory_refuses_other_users_removals(work: Path) -> None:
    sticky = work / "sticky"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    for name in ("roots", "target"):
        (sticky / name).write_bytes(b"root's")
        os.chmod(sticky / name, 0o666)
    (sticky / "rootsdir").mkdir()
    os.chmod(sticky / "rootsdir", 0o777)
    plain = work / "plain"
    plain.mkdir()
    os.chmod(plain, 0o777)
    (plain / "roots").write_bytes(b"root's")
    got = as_nobody(
        work,
        """
attempt("unlink", lambda: os.unlink("sticky/roots"))
attempt("rmdir", lambda: os.rmdir("sticky/rootsdir"))
attempt("rename away", lambda: os.rename("sticky/roots", "sticky/mine-now"))
open("sticky/own", "w").close()
attempt("rename over", lambda: os.rename("sticky/own", "sticky/target"))
attempt("unlink own", lambda: os.unlink("sticky/own"))
os.mkdir("sticky/owndir")
attempt("rmdir own", lambda: os.rmdir("sticky/owndir"))
attempt("unlink without sticky", lambda: os.unlink("plain/roots"))
""",
    )
    assert got == {
        "unlink": errno.EPERM,
        "rmdir": errno.EPERM,
        "rename away": errno.EPERM,
        "rename over": errno.EPERM,
        "unlink own": 0,
        "rmdir own": 0,
        "unlink without sticky": 0,
    }
    assert sorted(os.listdir(sticky)) == ["roots", "rootsdir", "target"]
    assert (sticky / "roots").read_bytes() == b"root's"
    # The owner of the directory may remove anyone's entries; root may too.
    os.chown(sticky, NOBODY, NOBODY)
    got = as_nobody(work, 'attempt("unlink in own dir", lambda: os.unlink("sticky/roots"))')
    assert got == {"unlink in own dir": 0}
    os.unlink(sticky / "target")


def test_a_write_by_another_user_drops_setuid_and_setgid_roots_keeps_them(work: Path) -> None:
    f = work / "prog"
    f.write_bytes(b"#!/bin/sh\n")
    os.chmod(f, 0o6777)
    with open(f, "ab") as out:
        out.write(b"# root's write\n")
    assert mode_of(f) == 0o6777, "root (CAP_FSETID) keeps them"
    got = as_nobody(
        work,
        """
def write():
    with open("prog", "ab") as out:
        out.write(b"# nobody's write\\n")
attempt("write", write)
""",
    )
    assert got == {"write": 0}
    assert mode_of(f) == 0o777
    assert f.read_bytes().endswith(b"# nobody's write\n")
    # A truncate by another user drops them too.
    os.chmod(f, 0o4777)
    got = as_nobody(work, 'attempt("truncate", lambda: os.truncate("prog", 3))')
    assert got == {"truncate": 0}
    assert (mode_of(f), f.stat().st_size) == (0o777, 3)


def test_chown_drops_setuid_and_setgid_of_a_file(work: Path) -> None:
    f = work / "f"
    f.write_bytes(b"x")
    os.chmod(f, 0o6755)
    os.chown(f, NOBODY, NOBODY)
    st = os.stat(f)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (NOBODY, NOBODY, 0o755)
    # A directory's stay.
    d = work / "d"
    d.mkdir()
    os.chmod(d, 0o3775)
    os.chown(d, NOBODY, NOBODY)
    assert mode_of(d) == 0o3775


def test_who_may_chmod_and_chown_what(work: Path) -> None:
    (work / "roots").write_bytes(b"x")
    os.chmod(work / "roots", 0o644)
    # nobody's file in group 0, a group nobody is not in.
    (work / "mine").write_bytes(b"x")
    os.chown(work / "mine", NOBODY, 0)
    os.chmod(work / "mine", 0o644)
    got = as_nobody(
        work,
        """
attempt("chmod of another's", lambda: os.chmod("roots", 0o666))
attempt("chown of another's", lambda: os.chown("roots", os.getuid(), -1))
attempt("chown to another uid", lambda: os.chown("mine", 0, -1))
attempt("chgrp to a group not mine", lambda: os.chown("mine", -1, 1))
attempt("chmod setgid, not in the group", lambda: os.chmod("mine", 0o2755))
out["mode then"] = os.stat("mine").st_mode & 0o7777
attempt("chgrp to my group", lambda: os.chown("mine", -1, os.getgid()))
attempt("chmod setgid in my group", lambda: os.chmod("mine", 0o2755))
""",
    )
    assert got == {
        "chmod of another's": errno.EPERM,
        "chown of another's": errno.EPERM,
        "chown to another uid": errno.EPERM,
        "chgrp to a group not mine": errno.EPERM,
        "chmod setgid, not in the group": 0,
        "mode then": 0o755,
        "chgrp to my group": 0,
        "chmod setgid in my group": 0,
    }
    assert mode_of(work / "roots") == 0o644
    st = os.stat(work / "mine")
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (NOBODY, NOBODY, 0o2755)


def test_names_over_255_bytes_are_refused_and_listings_still_work(work: Path) -> None:
    longest = "n" * 255
    too_long = "n" * 256
    (work / "plain").write_bytes(b"x")
    tries = {
        "create": lambda: os.open(work / too_long, os.O_CREAT | os.O_WRONLY, 0o644),
        "mkdir": lambda: os.mkdir(work / too_long),
        "symlink": lambda: os.symlink("plain", work / too_long),
        "link": lambda: os.link(work / "plain", work / too_long),
        "rename": lambda: os.rename(work / "plain", work / too_long),
        "mkfifo": lambda: os.mkfifo(work / too_long),
        "stat": lambda: os.stat(work / too_long),
    }
    for what, call in tries.items():
        with pytest.raises(OSError) as info:
            call()
        assert info.value.errno == errno.ENAMETOOLONG, what
    (work / longest).write_bytes(b"255")
    assert sorted(os.listdir(work)) == sorted([longest, "plain"])
    assert (work / longest).read_bytes() == b"255"


def test_only_a_caller_with_cap_mknod_makes_a_device_node(work: Path) -> None:
    got = as_nobody(
        work,
        """
import stat
attempt("char", lambda: os.mknod("c", 0o644 | stat.S_IFCHR, os.makedev(1, 3)))
attempt("block", lambda: os.mknod("b", 0o644 | stat.S_IFBLK, os.makedev(1, 2)))
attempt("fifo", lambda: os.mknod("p", 0o644 | stat.S_IFIFO))
""",
    )
    # The kernel's check, before the mount is asked; a FIFO needs none.
    assert got == {"char": errno.EPERM, "block": errno.EPERM, "fifo": 0}
    assert sorted(os.listdir(work)) == ["p"]
    assert os.lstat(work / "p").st_uid == NOBODY
