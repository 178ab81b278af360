"""Symbolic links through the mount (the kernel follows them, the engine
keeps them), and the tools that carry links: tar, cp -a, rsync -a, find."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest
from daemon_cluster import CHUNK
from mount_support import removed_once_released

pytestmark = pytest.mark.core_claim


@pytest.fixture
def ns(mnt: Path, request: pytest.FixtureRequest) -> Path:
    """A fresh directory on the mount."""
    path = mnt / request.node.name.replace("[", "-").replace("]", "")
    path.mkdir()
    return path


def tree_with_links(root: Path) -> dict[str, str]:
    """Files, directories and links of every sort under ``root``; returns the
    links' targets by relative path."""
    for d in ("x", "x/y", "z"):
        (root / d).mkdir(parents=True)
    (root / "top").write_bytes(b"t" * 100)
    (root / "x/a").write_bytes(bytes(range(256)) * 700)
    (root / "z/c").write_bytes(os.urandom(3 * CHUNK + 5))
    links = {
        "to-top": "top",
        "x/up": "../top",
        "x/y/to-dir": "../../z",
        "z/dangling": "no/such/file",
        "absolute": "/etc/hostname",
        "x/chain": "up",
    }
    for rel, target in links.items():
        os.symlink(target, root / rel)
    return links


def links_under(root: Path) -> dict[str, str]:
    """Every link under ``root`` (not followed) and its target."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink():
                found[str(p.relative_to(root))] = os.readlink(p)
    return found


def same_tree(a: Path, b: Path) -> None:
    """``diff -r`` without following links (links compare by target), and
    the targets of every link."""
    subprocess.run(["diff", "-r", "--no-dereference", str(a), str(b)], check=True)
    assert links_under(a) == links_under(b)


def test_ln_s_readlink_and_open_through_a_link(ns: Path) -> None:
    (ns / "file").write_bytes(b"behind the link")
    subprocess.run(["ln", "-s", "file", str(ns / "rel")], check=True)
    os.symlink(str(ns / "file"), ns / "abs")
    out = subprocess.run(["readlink", str(ns / "rel")], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "file"
    assert os.readlink(ns / "abs") == str(ns / "file")
    # lstat sees the link itself, stat what it points at.
    st = os.lstat(ns / "rel")
    assert stat.S_ISLNK(st.st_mode) and st.st_size == len("file")
    assert stat.S_IMODE(st.st_mode) == 0o777
    assert os.stat(ns / "rel").st_ino == os.stat(ns / "file").st_ino
    # Opened, read and written through either link.
    assert (ns / "rel").read_bytes() == b"behind the link"
    with open(ns / "abs", "ab") as f:
        f.write(b", appended")
    assert (ns / "file").read_bytes() == b"behind the link, appended"
    # A link to a directory is walked into by the kernel.
    (ns / "d").mkdir()
    (ns / "d" / "inner").write_bytes(b"in")
    os.symlink("d", ns / "to-d")
    assert os.listdir(ns / "to-d") == ["inner"]
    assert (ns / "to-d" / "inner").read_bytes() == b"in"
    assert sorted(os.listdir(ns)) == ["abs", "d", "file", "rel", "to-d"]


def test_link_errors_renames_and_removal(ns: Path) -> None:
    (ns / "file").write_bytes(b"x")
    os.symlink("nowhere", ns / "dangling")
    assert not (ns / "dangling").exists() and os.path.lexists(ns / "dangling")
    with pytest.raises(FileNotFoundError):
        (ns / "dangling").read_bytes()
    with pytest.raises(FileExistsError):
        os.symlink("x", ns / "file")
    with pytest.raises(FileExistsError):
        os.symlink("x", ns / "dangling")
    with pytest.raises(FileNotFoundError):
        os.symlink("x", ns / "missing" / "l")
    with pytest.raises(OSError) as e:
        os.readlink(ns / "file")
    assert e.value.errno == errno.EINVAL
    # Linux's own bound: 4095 bytes of target, no more.
    longest = "t/" * 2047 + "x"
    os.symlink(longest, ns / "longest")
    assert os.readlink(ns / "longest") == longest
    with pytest.raises(OSError) as e:
        os.symlink(longest + "y", ns / "too-long")
    assert e.value.errno == errno.ENAMETOOLONG
    # Renamed as a file is (no data moves), over a file too.
    os.rename(ns / "dangling", ns / "moved")
    assert os.readlink(ns / "moved") == "nowhere"
    os.rename(ns / "moved", ns / "file")
    assert os.readlink(ns / "file") == "nowhere"
    # Removed without touching what it points at.
    (ns / "kept").write_bytes(b"kept")
    os.symlink("kept", ns / "to-kept")
    os.unlink(ns / "to-kept")
    assert (ns / "kept").read_bytes() == b"kept"
    assert sorted(os.listdir(ns)) == ["file", "kept", "longest"]


def test_tar_of_a_tree_with_links_extracted_onto_the_mount(ns: Path, tmp_path: Path) -> None:
    src = tmp_path / "tree"
    links = tree_with_links(src)
    archive = tmp_path / "tree.tar"
    subprocess.run(["tar", "-C", str(src), "-cf", str(archive), "."], check=True)
    with tarfile.open(archive) as t:
        archived = {m.name.removeprefix("./"): m.linkname for m in t.getmembers() if m.issym()}
    assert archived == links
    (ns / "untar").mkdir()
    subprocess.run(["tar", "-C", str(ns / "untar"), "-xf", str(archive)], check=True)
    same_tree(src, ns / "untar")
    assert links_under(ns / "untar") == links
    # And back: an archive made on the mount holds the same links.
    again = tmp_path / "again.tar"
    subprocess.run(["tar", "-C", str(ns / "untar"), "-cf", str(again), "."], check=True)
    (tmp_path / "out").mkdir()
    subprocess.run(["tar", "-C", str(tmp_path / "out"), "-xf", str(again)], check=True)
    same_tree(src, tmp_path / "out")


def test_cp_a_round_trip_and_find_type_l(ns: Path, tmp_path: Path) -> None:
    src = tmp_path / "tree"
    links = tree_with_links(src)
    os.utime(src / "x" / "up", ns=(1_000_000_000, 2_000_000_000), follow_symlinks=False)
    subprocess.run(["cp", "-a", str(src), str(ns / "copy")], check=True)
    same_tree(src, ns / "copy")
    # cp -a keeps the link's own times.
    assert os.lstat(ns / "copy" / "x" / "up").st_mtime_ns == 2_000_000_000
    back = tmp_path / "back"
    subprocess.run(["cp", "-a", str(ns / "copy"), str(back)], check=True)
    same_tree(src, back)
    found = subprocess.run(
        ["find", str(ns / "copy"), "-type", "l"], capture_output=True, text=True, check=True
    )
    assert {str(Path(p).relative_to(ns / "copy")) for p in found.stdout.split()} == set(links)
    files = subprocess.run(
        ["find", str(ns / "copy"), "-type", "f"], capture_output=True, text=True, check=True
    )
    assert {str(Path(p).relative_to(ns / "copy")) for p in files.stdout.split()} == {
        "top",
        "x/a",
        "z/c",
    }
    removed_once_released(lambda: shutil.rmtree(ns / "copy"), "removal of copy/")
    assert not (ns / "copy").exists()
    assert (src / "top").read_bytes() == b"t" * 100


def test_rsync_a_carries_links(ns: Path, tmp_path: Path) -> None:
    rsync = shutil.which("rsync")
    if rsync is None:
        pytest.skip("rsync is not installed")
    src = tmp_path / "tree"
    tree_with_links(src)
    subprocess.run([rsync, "-a", f"{src}/", f"{ns / 'synced'}/"], check=True)
    same_tree(src, ns / "synced")
    back = tmp_path / "back"
    subprocess.run([rsync, "-a", f"{ns / 'synced'}/", f"{back}/"], check=True)
    same_tree(src, back)
