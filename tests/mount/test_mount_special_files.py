"""FIFOs, unix sockets and device nodes on the mount: names with
attributes in the engine, their meeting of readers and writers the
kernel's, on one node; a device node is never opened (the mount is
``nodev``)."""

from __future__ import annotations

import errno
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from mount_support import HANG_GUARD_S


def test_a_fifo_is_a_name_with_its_mode_and_joins_two_processes(mnt: Path) -> None:
    top = mnt / "fifos"
    top.mkdir()
    fifo = top / "pipe"
    os.mkfifo(fifo, 0o640)
    st = os.lstat(fifo)
    assert stat.S_ISFIFO(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o640
    assert (st.st_size, st.st_nlink) == (0, 1)
    assert os.listdir(top) == ["pipe"]
    # The listing gives its type (find -type reads it from readdir).
    found = subprocess.run(
        ["find", str(top), "-type", "p"], capture_output=True, text=True, check=True
    )
    assert found.stdout.split() == [str(fifo)]
    # A writer in another process; the reader here: the kernel joins them.
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; open(sys.argv[1], 'wb').write(b'through the fifo')",
            fifo,
        ]
    )
    try:
        with open(fifo, "rb") as reader:
            got = reader.read()
        assert writer.wait(timeout=HANG_GUARD_S) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert got == b"through the fifo"
    # chmod, rename, link and unlink as for any name.
    os.chmod(fifo, 0o600)
    os.rename(fifo, top / "moved")
    os.link(top / "moved", top / "second")
    st = os.lstat(top / "second")
    assert stat.S_ISFIFO(st.st_mode) and (stat.S_IMODE(st.st_mode), st.st_nlink) == (0o600, 2)
    os.unlink(top / "moved")
    os.unlink(top / "second")
    assert os.listdir(top) == []
    os.mkfifo(top / "x")
    with pytest.raises(FileExistsError):
        os.mkfifo(top / "x")
    with pytest.raises(FileExistsError):
        os.mknod(top / "x", 0o600 | stat.S_IFSOCK)


def test_a_unix_socket_bound_on_the_mount_takes_connections(mnt: Path) -> None:
    top = mnt / "sockets"
    top.mkdir()
    path = top / "s"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        server.listen(1)
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.settimeout(HANG_GUARD_S)
        client.connect(str(path))
        conn, _ = server.accept()
        client.sendall(b"hello")
        assert conn.recv(5) == b"hello"
        conn.close()
        client.close()
    finally:
        server.close()
    os.unlink(path)
    assert not path.exists()


def test_device_nodes_keep_type_and_number_and_are_never_opened(mnt: Path) -> None:
    top = mnt / "devices"
    top.mkdir()
    for name, kind, number, is_kind in (
        ("block", stat.S_IFBLK, os.makedev(1, 2), stat.S_ISBLK),
        ("char", stat.S_IFCHR, os.makedev(1, 3), stat.S_ISCHR),
    ):
        node = top / name
        os.mknod(node, 0o644 | kind, number)
        st = os.lstat(node)
        assert is_kind(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644
        assert (st.st_rdev, st.st_size, st.st_nlink) == (number, 0, 1)
        # The mount is nodev: the kernel refuses the open, whatever the
        # number names on this node (1,3 is /dev/null).
        for flags in (os.O_RDONLY, os.O_WRONLY):
            with pytest.raises(PermissionError) as info:
                os.open(node, flags)
            assert info.value.errno == errno.EACCES
        # Its number travels with a rename.
        os.rename(node, top / f"{name}-moved")
        assert os.lstat(top / f"{name}-moved").st_rdev == number
        with pytest.raises(FileExistsError):
            os.mknod(top / f"{name}-moved", 0o600 | kind, number)
    assert sorted(os.listdir(top)) == ["block-moved", "char-moved"]
    found = subprocess.run(
        ["find", str(top), "-type", "b"], capture_output=True, text=True, check=True
    )
    assert found.stdout.split() == [str(top / "block-moved")]
    for name in os.listdir(top):
        os.unlink(top / name)
    assert os.listdir(top) == []
