"""Hard links through the mount: ln and nlink, names in several directories, a name
removed while the file is open, and the tools that keep hard links: cp -al, tar and
rsync -aH (docs/MOUNT.md, docs/NAMESPACE.md "Hard links")."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from daemon_cluster import CHUNK
from mount_support import Mounted, removed_once_released, wait_for

pytestmark = pytest.mark.core_claim


@pytest.fixture
def ns(mnt: Path, request: pytest.FixtureRequest) -> Path:
    """A fresh directory on the mount."""
    path = mnt / request.node.name.replace("[", "-").replace("]", "")
    path.mkdir()
    return path


def backing_files(mounted: Mounted, ino: int) -> list[Path]:
    """The backing files of the file with id ``ino`` (the mount's st_ino)."""
    root, name = mounted.cluster.root / "data", f"@{ino:016x}"
    return [p for n in mounted.cluster.names if (p := root / n / name).exists()]


def nlink_by_stat(path: Path) -> int:
    out = subprocess.run(["stat", "-c", "%h", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def tree_with_hard_links(root: Path) -> None:
    """Files with two and three names in several directories, a lone file and a
    symbolic link."""
    for d in ("a", "a/b", "c"):
        (root / d).mkdir(parents=True)
    (root / "a/two").write_bytes(os.urandom(2 * CHUNK + 3))
    os.link(root / "a/two", root / "c/two-again")
    (root / "three").write_bytes(b"three names")
    os.link(root / "three", root / "a/b/three-2")
    os.link(root / "three", root / "c/three-3")
    (root / "lone").write_bytes(b"one name")
    os.symlink("three", root / "to-three")


def link_groups(root: Path) -> set[frozenset[str]]:
    """The sets of relative paths that are names of one file (regular files)."""
    groups: dict[int, set[str]] = {}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            p = Path(dirpath) / name
            if not p.is_symlink():
                groups.setdefault(os.lstat(p).st_ino, set()).add(str(p.relative_to(root)))
    return {frozenset(g) for g in groups.values()}


def same_tree(a: Path, b: Path) -> None:
    subprocess.run(["diff", "-r", "--no-dereference", str(a), str(b)], check=True)
    assert link_groups(a) == link_groups(b)
    for dirpath, _, filenames in os.walk(a):
        for name in filenames:
            p = Path(dirpath) / name
            if not p.is_symlink():
                q = b / p.relative_to(a)
                assert os.lstat(q).st_nlink == os.lstat(p).st_nlink, q


def test_ln_and_nlink_across_directories(ns: Path, mounted: Mounted) -> None:
    (ns / "d").mkdir()
    data = os.urandom(3 * CHUNK + 11)
    (ns / "f").write_bytes(data)
    subprocess.run(["ln", str(ns / "f"), str(ns / "d" / "g")], check=True)
    assert nlink_by_stat(ns / "f") == nlink_by_stat(ns / "d" / "g") == 2
    ino = os.stat(ns / "f").st_ino
    assert os.stat(ns / "d" / "g").st_ino == ino
    assert (ns / "d" / "g").read_bytes() == data
    # A write through one name is read through the other.
    with open(ns / "d" / "g", "r+b") as f:
        f.write(b"head")
    assert (ns / "f").read_bytes() == b"head" + data[4:]
    os.link(ns / "d" / "g", ns / "h")
    assert nlink_by_stat(ns / "f") == 3
    # Removing names keeps the data while one is left.
    os.unlink(ns / "f")
    assert nlink_by_stat(ns / "h") == 2
    os.unlink(ns / "d" / "g")
    assert nlink_by_stat(ns / "h") == 1
    assert (ns / "h").read_bytes() == b"head" + data[4:]
    assert backing_files(mounted, ino)
    os.unlink(ns / "h")
    # Its data goes at the last release, which the kernel may send after
    # the read's close returned.
    wait_for(lambda: not backing_files(mounted, ino), "removal at the last release")
    assert os.listdir(ns) == ["d"] and os.listdir(ns / "d") == []


def test_link_errors(ns: Path) -> None:
    (ns / "f").write_bytes(b"x")
    (ns / "g").write_bytes(b"y")
    (ns / "d").mkdir()
    with pytest.raises(FileExistsError):
        os.link(ns / "f", ns / "g")
    with pytest.raises(FileExistsError):
        os.link(ns / "f", ns / "d")
    with pytest.raises(FileNotFoundError):
        os.link(ns / "none", ns / "new")
    with pytest.raises(FileNotFoundError):
        os.link(ns / "f", ns / "missing" / "new")
    with pytest.raises(NotADirectoryError):
        os.link(ns / "f", ns / "g" / "new")
    with pytest.raises(PermissionError):
        os.link(ns / "d", ns / "d2")
    assert sorted(os.listdir(ns)) == ["d", "f", "g"]
    assert nlink_by_stat(ns / "f") == 1


def test_rename_between_two_names_of_one_file(ns: Path) -> None:
    (ns / "a").write_bytes(b"one file")
    os.link(ns / "a", ns / "b")
    os.rename(ns / "a", ns / "b")
    assert sorted(os.listdir(ns)) == ["a", "b"]
    assert nlink_by_stat(ns / "a") == 2
    # Another file over a name of two: the file keeps its other name.
    (ns / "c").write_bytes(b"another")
    os.rename(ns / "c", ns / "b")
    assert (ns / "b").read_bytes() == b"another"
    assert (ns / "a").read_bytes() == b"one file"
    assert nlink_by_stat(ns / "a") == 1


def test_an_open_file_whose_names_are_removed(ns: Path, mounted: Mounted) -> None:
    data = os.urandom(CHUNK + 7)
    (ns / "f").write_bytes(data)
    os.link(ns / "f", ns / "g")
    ino = os.stat(ns / "f").st_ino
    with open(ns / "f", "r+b") as f:
        # The other name goes: the open file and its own name are untouched.
        os.unlink(ns / "g")
        assert os.fstat(f.fileno()).st_nlink == 1
        assert f.read() == data
        # Another name again, then the one it was opened by goes: no hidden
        # name is needed while the other name holds the data.
        os.link(ns / "f", ns / "h")
        os.unlink(ns / "f")
        assert os.listdir(ns) == ["h"]
        f.seek(0)
        f.write(b"via the handle")
        f.flush()
        assert (ns / "h").read_bytes()[:14] == b"via the handle"
        # The last name goes while open: the data stays for the handle.
        os.unlink(ns / "h")
        assert os.listdir(ns) == []
        assert os.fstat(f.fileno()).st_nlink == 0
        f.seek(0)
        assert f.read() == b"via the handle" + data[14:]
    # The last release (sent by the kernel after close returns) removes it.
    assert os.listdir(ns) == []
    wait_for(lambda: not backing_files(mounted, ino), "removal at the last release")


def test_cp_al_and_tar_keep_hard_links(ns: Path, tmp_path: Path) -> None:
    src = tmp_path / "tree"
    tree_with_hard_links(src)
    # tar onto the mount: one file per group of names.
    archive = tmp_path / "tree.tar"
    subprocess.run(["tar", "-C", str(src), "-cf", str(archive), "."], check=True)
    (ns / "untar").mkdir()
    subprocess.run(["tar", "-C", str(ns / "untar"), "-xf", str(archive)], check=True)
    same_tree(src, ns / "untar")
    # cp -al on the mount: every name of the copy is a name of the original.
    subprocess.run(["cp", "-al", str(ns / "untar"), str(ns / "linked")], check=True)
    for dirpath, _, filenames in os.walk(ns / "untar"):
        for name in filenames:
            p = Path(dirpath) / name
            q = ns / "linked" / p.relative_to(ns / "untar")
            assert os.lstat(q).st_ino == os.lstat(p).st_ino, q
    assert nlink_by_stat(ns / "linked" / "three") == 6
    assert nlink_by_stat(ns / "linked" / "lone") == 2
    # And back: an archive made on the mount records the names as links.
    again = tmp_path / "again.tar"
    subprocess.run(["tar", "-C", str(ns / "untar"), "-cf", str(again), "."], check=True)
    with tarfile.open(again) as t:
        hard = {m.name.removeprefix("./") for m in t.getmembers() if m.islnk()}
    assert len(hard) == 3, hard
    (tmp_path / "out").mkdir()
    subprocess.run(["tar", "-C", str(tmp_path / "out"), "-xf", str(again)], check=True)
    same_tree(src, tmp_path / "out")
    removed_once_released(lambda: shutil.rmtree(ns / "linked"), "removal of linked/")
    assert nlink_by_stat(ns / "untar" / "three") == 3


def test_rsync_ah_round_trip(ns: Path, tmp_path: Path) -> None:
    rsync = shutil.which("rsync")
    if rsync is None:
        pytest.skip("rsync is not installed")
    src = tmp_path / "tree"
    tree_with_hard_links(src)
    subprocess.run([rsync, "-aH", f"{src}/", f"{ns / 'synced'}/"], check=True)
    same_tree(src, ns / "synced")
    back = tmp_path / "back"
    subprocess.run([rsync, "-aH", f"{ns / 'synced'}/", f"{back}/"], check=True)
    same_tree(src, back)


def test_a_name_renamed_elsewhere_leaves_the_inode_usable(ns: Path, mounted: Mounted) -> None:
    (ns / "f").write_bytes(b"two names")
    os.link(ns / "f", ns / "g")
    ino = os.stat(ns / "f").st_ino
    assert os.stat(ns / "g").st_ino == ino
    # Another client moves the name the mount knows the inode by first.
    with mounted.cluster.client(name="elsewhere") as c:
        c.rename(f"{ns.name}/f", f"{ns.name}/moved")
    # Open, stat and read by inode go through the name that is left.
    with open(ns / "g", "rb") as f:
        assert os.fstat(f.fileno()).st_nlink == 2
        assert f.read() == b"two names"
    assert sorted(os.listdir(ns)) == ["g", "moved"]
    assert (ns / "moved").read_bytes() == b"two names"


def test_chmod_and_chown_through_one_name_show_through_the_others(ns: Path) -> None:
    (ns / "f").write_bytes(b"x")
    os.link(ns / "f", ns / "g")
    assert os.stat(ns / "f").st_ino == os.stat(ns / "g").st_ino
    os.chmod(ns / "g", 0o600)
    os.utime(ns / "g", ns=(3_000_000_000, 4_000_000_000))
    for name in ("f", "g"):
        st = os.stat(ns / name)
        assert (st.st_mode & 0o777, st.st_mtime_ns) == (0o600, 4_000_000_000), name
    os.chmod(ns / "f", 0o640)
    assert {os.stat(ns / n).st_mode & 0o777 for n in ("f", "g")} == {0o640}


def test_attributes_changed_through_one_name_reach_every_client(ns: Path, mounted: Mounted) -> None:
    # The engine keeps a linked file's mode, owner and times on its home daemon,
    # not per name: a native client that never looked the name up sees a change
    # made through the mount on the other name, and the mount sees one made by
    # that client (the mount's attribute timeout is 0: no cache to wait out).
    (ns / "f").write_bytes(b"two names")
    os.link(ns / "f", ns / "g")
    os.chmod(ns / "f", 0o604)
    os.utime(ns / "f", ns=(5_000_000_000, 6_000_000_000))
    with mounted.cluster.client(name="elsewhere") as c:
        seen = c.stat(f"{ns.name}/g")
        assert (seen["mode"] & 0o777, seen["nlink"]) == (0o604, 2)
        assert (seen["atime_unix_ns"], seen["mtime_unix_ns"]) == (5_000_000_000, 6_000_000_000)
        c.setattr(f"{ns.name}/g", mode=0o640, uid=os.getuid(), gid=os.getgid())
        c.unlink(f"{ns.name}/g")
    st = os.stat(ns / "f")
    assert (st.st_mode & 0o777, st.st_nlink) == (0o640, 1)
    assert st.st_mtime_ns == 6_000_000_000


def test_a_chmod_through_one_mount_shows_through_another_on_the_other_name(
    ns: Path, mounted: Mounted, tmp_path: Path
) -> None:
    # Two mounts of one cluster are two nodes' views: the second name is made
    # through the other mount, so this one changes the file through the only
    # name it knows.
    (ns / "f").write_bytes(b"two mounts")
    with mounted.another_mount(tmp_path) as other:
        seen = other / ns.name / "g"
        os.link(other / ns.name / "f", seen)
        assert os.stat(seen).st_nlink == 2
        os.chmod(ns / "f", 0o600)
        os.utime(ns / "f", ns=(7_000_000_000, 8_000_000_000))
        st = os.stat(seen)
        assert (st.st_mode & 0o777, st.st_mtime_ns) == (0o600, 8_000_000_000)
        os.chmod(seen, 0o640)
        assert os.stat(ns / "f").st_mode & 0o777 == 0o640
        assert os.stat(ns / "g").st_mode & 0o777 == 0o640
