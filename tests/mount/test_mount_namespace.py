"""Directories, rename, attributes and statfs through the mount, and the
tools users run on it (cp -r, tar, find)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from daemon_cluster import CHUNK
from mount_support import removed_once_released

pytestmark = pytest.mark.core_claim


@pytest.fixture
def ns(mnt: Path, request: pytest.FixtureRequest) -> Path:
    """A fresh directory on the mount (skips when the daemons hold no directories)."""
    path = mnt / request.node.name.replace("[", "-").replace("]", "")
    try:
        path.mkdir()
    except OSError as e:
        if e.errno == errno.ENOSYS:
            pytest.skip("these daemons hold no namespace (mkdir is ENOSYS)")
        raise
    return path


def test_mkdir_readdir_rmdir_with_ten_thousand_entries(ns: Path) -> None:
    d = ns / "big"
    d.mkdir()
    names = [f"e{i:05d}" for i in range(10_000)]
    for n in names:
        fd = os.open(d / n, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        os.close(fd)
    assert sorted(os.listdir(d)) == names
    with pytest.raises(OSError) as full:
        d.rmdir()
    assert full.value.errno == errno.ENOTEMPTY
    for n in names:
        os.unlink(d / n)
    assert os.listdir(d) == []
    d.rmdir()
    assert not d.exists()


def test_directory_errors(ns: Path) -> None:
    (ns / "d").mkdir()
    (ns / "f").write_bytes(b"x")
    with pytest.raises(FileExistsError):
        (ns / "d").mkdir()
    with pytest.raises(FileExistsError):
        (ns / "f").mkdir()
    with pytest.raises(FileNotFoundError):
        (ns / "missing" / "sub").mkdir()
    with pytest.raises(NotADirectoryError):
        (ns / "f" / "sub").mkdir()
    with pytest.raises(NotADirectoryError):
        os.listdir(ns / "f")
    with pytest.raises(NotADirectoryError):
        (ns / "f").rmdir()
    with pytest.raises(IsADirectoryError):
        os.unlink(ns / "d")
    with pytest.raises(IsADirectoryError):
        os.open(ns / "d", os.O_WRONLY)
    with pytest.raises(FileNotFoundError):
        (ns / "missing").rmdir()
    assert (ns / "d").is_dir()
    assert os.stat(ns / "d").st_nlink >= 2


def test_nested_paths(ns: Path) -> None:
    deep = ns
    for i in range(10):
        deep = deep / f"l{i}"
        deep.mkdir()
    (deep / "leaf").write_bytes(b"deep data")
    assert (deep / "leaf").read_bytes() == b"deep data"
    found = subprocess.run(
        ["find", str(ns), "-name", "leaf"], capture_output=True, text=True, check=True
    )
    assert found.stdout.split() == [str(deep / "leaf")]


def test_rename_within_and_across_directories_and_over_a_file(ns: Path) -> None:
    a, b = ns / "a", ns / "b"
    a.mkdir()
    b.mkdir()
    data = bytes(range(256)) * (CHUNK // 64)
    (a / "one").write_bytes(data)
    os.rename(a / "one", a / "two")
    assert not (a / "one").exists()
    assert (a / "two").read_bytes() == data
    os.rename(a / "two", b / "three")
    assert (b / "three").read_bytes() == data
    assert os.listdir(a) == []
    (b / "victim").write_bytes(b"old")
    os.rename(b / "three", b / "victim")
    assert (b / "victim").read_bytes() == data
    assert sorted(os.listdir(b)) == ["victim"]


def test_renaming_a_directory_is_refused_with_exdev(ns: Path) -> None:
    (ns / "d").mkdir()
    with pytest.raises(OSError) as refused:
        os.rename(ns / "d", ns / "e")
    assert refused.value.errno == errno.EXDEV


def test_chmod_chown_and_utimens(ns: Path) -> None:
    path = ns / "f"
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640)
    os.close(fd)
    assert path.stat().st_mode & 0o777 == 0o640
    os.chmod(path, 0o604)
    assert path.stat().st_mode & 0o777 == 0o604
    os.chown(path, 1234, 5678)
    st = path.stat()
    assert (st.st_uid, st.st_gid) == (1234, 5678)
    os.utime(path, ns=(1_000_000_000_123, 2_000_000_000_456))
    st = path.stat()
    assert st.st_atime_ns == 1_000_000_000_123
    assert st.st_mtime_ns == 2_000_000_000_456


def test_a_write_moves_mtime(ns: Path) -> None:
    path = ns / "f"
    path.write_bytes(b"a")
    os.utime(path, ns=(1, 1))
    with path.open("r+b") as f:
        f.write(b"b")
    assert path.stat().st_mtime_ns > 1


def test_statfs_reports_the_cluster(mnt: Path, ns: Path) -> None:
    st = os.statvfs(mnt)
    assert st.f_bsize > 0
    assert st.f_blocks > 0
    assert 0 < st.f_bavail <= st.f_blocks
    assert st.f_namemax >= 255


def test_cp_tar_and_find(ns: Path, tmp_path: Path) -> None:
    src = tmp_path / "tree"
    for d in ("x", "x/y", "z"):
        (src / d).mkdir(parents=True)
    files = {
        "top": b"t" * 100,
        "x/a": bytes(range(256)) * 700,
        "x/y/b": b"",
        "z/c": os.urandom(3 * CHUNK + 5),
    }
    for rel, data in files.items():
        (src / rel).write_bytes(data)
    subprocess.run(["cp", "-r", str(src), str(ns / "copy")], check=True)
    for rel, data in files.items():
        assert (ns / "copy" / rel).read_bytes() == data
    archive = tmp_path / "tree.tar"
    subprocess.run(["tar", "-C", str(ns / "copy"), "-cf", str(archive), "."], check=True)
    with tarfile.open(archive) as t:
        assert {m.name.removeprefix("./") for m in t.getmembers() if m.isfile()} == set(files)
    (ns / "untar").mkdir()
    subprocess.run(["tar", "-C", str(ns / "untar"), "-xf", str(archive)], check=True)
    for rel, data in files.items():
        assert (ns / "untar" / rel).read_bytes() == data
    found = subprocess.run(
        ["find", str(ns / "untar"), "-type", "f"], capture_output=True, text=True, check=True
    )
    assert {str(Path(p).relative_to(ns / "untar")) for p in found.stdout.split()} == set(files)
    removed_once_released(lambda: shutil.rmtree(ns / "copy"), "removal of copy/")
    assert not (ns / "copy").exists()


def test_an_open_file_renamed_keeps_its_descriptor(ns: Path) -> None:
    path = ns / "before"
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.write(fd, b"first ")
        os.rename(path, ns / "after")
        os.write(fd, b"second")
        assert os.pread(fd, 12, 0) == b"first second"
    finally:
        os.close(fd)
    assert (ns / "after").read_bytes() == b"first second"


def test_ino_is_stable_across_rename(ns: Path) -> None:
    (ns / "a").write_bytes(b"x")
    ino = os.stat(ns / "a").st_ino
    os.rename(ns / "a", ns / "b")
    assert os.stat(ns / "b").st_ino == ino
    assert {e.name: e.inode() for e in os.scandir(ns)}["b"] == ino


def test_ls_find_and_du_see_real_sizes_though_readdir_carries_none(ns: Path) -> None:
    # readdir entries carry only a name, type and ino; these tools stat
    # each entry, so they see the size, blocks and mode from the daemons.
    sizes = {"empty": 0, "small": 100, "large": 3 * CHUNK + 5}
    for name, size in sizes.items():
        (ns / name).write_bytes(os.urandom(size))
    listed = subprocess.run(
        ["ls", "-ln", str(ns)], capture_output=True, text=True, check=True
    ).stdout.splitlines()[1:]
    assert {line.split()[-1]: int(line.split()[4]) for line in listed} == sizes
    assert all(line.startswith("-rw") for line in listed)

    def find(*test: str) -> set[str]:
        out = subprocess.run(
            ["find", str(ns), "-type", "f", *test], capture_output=True, text=True, check=True
        ).stdout
        return {Path(p).name for p in out.split()}

    assert find("-size", "100c") == {"small"}
    assert find("-size", f"+{CHUNK}c") == {"large"}
    assert find("-empty") == {"empty"}
    apparent = subprocess.run(
        ["du", "-b", "--apparent-size", str(ns / "large")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert int(apparent.split()[0]) == sizes["large"]
    used = subprocess.run(
        ["du", "-B1", str(ns / "large")], capture_output=True, text=True, check=True
    ).stdout
    assert int(used.split()[0]) >= sizes["large"]
