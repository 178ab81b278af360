"""POSIX file semantics through a real FUSE mount over four daemons."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_cluster import CHUNK
from mount_support import wait_for

pytestmark = pytest.mark.core_claim


def pattern(size: int, seed: int) -> bytes:
    """Bytes that differ at every offset of a chunk, and from file to file."""
    return bytes((i * 31 + seed * 7 + i // 251) & 0xFF for i in range(size))


@pytest.mark.parametrize(
    ("offset", "size"),
    [(0, 1), (0, CHUNK), (CHUNK - 3, 7), (CHUNK * 2 + 5, 3 * CHUNK + 11), (1, 1_048_577)],
)
def test_write_read_across_chunk_borders_byte_for_byte(mnt: Path, offset: int, size: int) -> None:
    path = mnt / f"borders-{offset}-{size}"
    data = pattern(size, offset)
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_EXCL, 0o640)
    try:
        assert os.pwrite(fd, data, offset) == size
    finally:
        os.close(fd)
    assert path.stat().st_size == offset + size
    with path.open("rb") as f:
        whole = f.read()
    assert whole[:offset] == bytes(offset)
    assert whole[offset:] == data
    path.unlink()
    assert not path.exists()


def test_small_and_large_requests_on_one_handle_keep_their_order(mnt: Path) -> None:
    # Small requests are served by the session thread, those over 128 KiB
    # by workers: overlapping writes on one handle must land in program
    # order, and reads of either size see every earlier write.
    path = mnt / "mixed-sizes"
    big = 1 << 20
    model = bytearray(2 * big)
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_EXCL, 0o600)
    try:
        for i in range(8):
            offset = (i % 2) * big // 2
            data = pattern(big, i)
            assert os.pwrite(fd, data, offset) == big
            model[offset : offset + big] = data
            small = bytes([i + 1]) * 4096
            at = offset + 4096 * (i + 3)
            assert os.pwrite(fd, small, at) == len(small)
            model[at : at + len(small)] = small
            assert os.pread(fd, 4096, at) == small
            assert os.pread(fd, big, offset) == bytes(model[offset : offset + big])
    finally:
        os.close(fd)
    assert path.read_bytes() == bytes(model[: big // 2 + big])
    path.unlink()


def test_holes_read_as_zeros(mnt: Path) -> None:
    path = mnt / "sparse"
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        os.pwrite(fd, b"tail", 5 * CHUNK + 17)
    finally:
        os.close(fd)
    assert path.stat().st_size == 5 * CHUNK + 21
    data = path.read_bytes()
    assert data[: 5 * CHUNK + 17] == bytes(5 * CHUNK + 17)
    assert data[-4:] == b"tail"


def test_truncate_down_and_up(mnt: Path) -> None:
    path = mnt / "truncated"
    data = pattern(3 * CHUNK + 100, 3)
    path.write_bytes(data)
    os.truncate(path, CHUNK + 1)
    assert path.stat().st_size == CHUNK + 1
    assert path.read_bytes() == data[: CHUNK + 1]
    os.truncate(path, 4 * CHUNK)
    assert path.stat().st_size == 4 * CHUNK
    assert path.read_bytes() == data[: CHUNK + 1] + bytes(3 * CHUNK - 1)
    with path.open("r+b") as f:
        f.truncate(10)
    assert path.read_bytes() == data[:10]


def test_o_trunc_empties_an_existing_file(mnt: Path) -> None:
    path = mnt / "otrunc"
    path.write_bytes(pattern(2 * CHUNK, 5))
    path.write_bytes(b"short")
    assert path.read_bytes() == b"short"


def test_append_writes_at_the_end(mnt: Path) -> None:
    path = mnt / "appended"
    path.write_bytes(b"start-")
    for i in range(3):
        with path.open("ab") as f:
            f.write(pattern(CHUNK // 2 + i, i))
    expected = b"start-" + b"".join(pattern(CHUNK // 2 + i, i) for i in range(3))
    assert path.read_bytes() == expected


WRITER = """
import os, sys
path, index, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = bytes(((index * 37 + i) & 0xFF) for i in range(size))
fd = os.open(path, os.O_WRONLY)
done = 0
while done < size:
    done += os.pwrite(fd, data[done:], index * size + done)
os.close(fd)
"""


def test_processes_write_disjoint_ranges_of_one_file(mnt: Path) -> None:
    path = mnt / "shared"
    path.write_bytes(b"")
    writers, size = 4, 3 * CHUNK + 123
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(i), str(size)])
        for i in range(writers)
    ]
    for p in procs:
        assert p.wait(timeout=120) == 0
    data = path.read_bytes()
    assert len(data) == writers * size
    for i in range(writers):
        want = bytes(((i * 37 + k) & 0xFF) for k in range(size))
        assert data[i * size : (i + 1) * size] == want, f"range of writer {i}"


def test_readdir_lists_every_file(mnt: Path) -> None:
    names = {f"listed-{i:03d}" for i in range(300)}
    for n in names:
        (mnt / n).write_bytes(n.encode())
    listed = set(os.listdir(mnt))
    assert names <= listed
    for n in sorted(names)[:5]:
        assert (mnt / n).read_bytes() == n.encode()
    for n in names:
        (mnt / n).unlink()
    assert not names & set(os.listdir(mnt))


def test_errors_reach_the_program_as_errno(mnt: Path) -> None:
    with pytest.raises(FileNotFoundError):
        os.stat(mnt / "missing")
    with pytest.raises(FileNotFoundError):
        os.open(mnt / "missing", os.O_RDONLY)
    with pytest.raises(FileNotFoundError):
        os.unlink(mnt / "missing")
    (mnt / "exists").write_bytes(b"x")
    with pytest.raises(FileExistsError):
        os.open(mnt / "exists", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)


def test_stat_reports_mode_and_size(mnt: Path) -> None:
    path = mnt / "modes"
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o640)
    os.write(fd, b"12345")
    os.close(fd)
    st = path.stat()
    assert st.st_size == 5
    assert os.path.isfile(path)
    assert os.path.isdir(mnt)


def test_other_users_are_refused_without_allow_other(mnt: Path) -> None:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed")
    (mnt / "private").write_bytes(b"x")
    assert os.stat(mnt).st_mode & 0o005 == 0o005  # the modes would let anyone list it
    # The child starts in the mount as root, then drops to nobody: the
    # refusal comes from the mount, not from a directory above it.
    done = subprocess.run(
        [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "ls", "."],
        cwd=mnt,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "Permission denied" in done.stderr, done.stderr


def test_the_kernels_readahead_on_the_mount_is_one_largest_request(mnt: Path) -> None:
    # FUSE caps readahead at the mount's device's read_ahead_kb (128 KiB by
    # default); the mount raises it, so buffered reads come as 1 MiB requests.
    device = os.stat(mnt).st_dev
    setting = Path(f"/sys/class/bdi/{os.major(device)}:{os.minor(device)}/read_ahead_kb")
    wait_for(lambda: setting.read_text().strip() == "1024", f"{setting} at 1024")
