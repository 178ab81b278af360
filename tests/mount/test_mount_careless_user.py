"""What another user of an ``--allow-other`` mount can do by accident: name
a file as the mount names the files it hides, fill the disk with 1 MiB
writes, ask ``df`` how big the mount is. Four daemons share one small
tmpfs, so the disk fills, and ``df`` would count it four times."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_cluster import Cluster
from mount_support import (
    HANG_GUARD_S,
    NOBODY,
    Mounted,
    python_as_nobody,
    skip_without_fuse,
    small_tmpfs,
)

from benchfs.mount.settings import MountSettings

pytestmark = pytest.mark.core_claim

MIB = 1 << 20
#: The daemons' data directories share this much space.
SMALL_MIB = 24
#: A name of the form the mount gives an open file that was unlinked.
RESERVED = ".benchfs-unlinked-0123456789abcdef"


@pytest.fixture(scope="module")
def shared_mount(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mounted]:
    skip_without_fuse()
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    root = tmp_path_factory.mktemp("careless")
    with small_tmpfs(root / "data", f"{SMALL_MIB}m"):
        cluster = Cluster(root, "shm")
        # One chunk per 1 MiB write: each write is one request to one daemon.
        cluster.chunk_size = MIB
        settings = MountSettings(rpc_deadline_s=10.0, allow_other=True)
        with Mounted(cluster, root, settings) as m:
            yield m


@pytest.fixture
def shared_dir(shared_mount: Mounted, request: pytest.FixtureRequest) -> Path:
    """A directory of the mount that anyone may write in."""
    path = shared_mount.point / request.node.name
    path.mkdir()
    path.chmod(0o777)
    return path


def as_nobody(cwd: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Runs a Python ``script`` as uid 65534, started in ``cwd``."""
    return python_as_nobody(cwd, script, *args)


MAKE_RESERVED = """
import errno, json, os, sys
name = sys.argv[1]
open("plain", "w").close()
os.mkdir("sub")
tries = {
    "create": lambda: os.open(name, os.O_CREAT | os.O_WRONLY, 0o644),
    "mkdir": lambda: os.mkdir(name),
    "symlink": lambda: os.symlink("plain", name),
    "link": lambda: os.link("plain", name),
    "rename": lambda: os.rename("plain", name),
    "create in a subdirectory": lambda: os.open("sub/" + name, os.O_CREAT | os.O_WRONLY),
}
out = {}
for what, call in tries.items():
    try:
        call()
        out[what] = 0
    except OSError as e:
        out[what] = e.errno
# Names that only look alike are a user's like any other.
for alike in (name + ".txt", ".benchfs-unlinked-01", ".benchfs-unlinked-0123456789abcdeg"):
    open("sub/" + alike, "w").close()
out["listed"] = sorted(os.listdir("sub"))
print(json.dumps(out))
"""


def test_a_user_cannot_take_the_names_the_mount_hides(shared_dir: Path) -> None:
    done = as_nobody(shared_dir, MAKE_RESERVED, RESERVED)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    listed = out.pop("listed")
    assert out == dict.fromkeys(out, errno.EPERM), out
    assert listed == sorted(
        [RESERVED + ".txt", ".benchfs-unlinked-01", ".benchfs-unlinked-0123456789abcdeg"]
    )
    # Nothing hidden was made: the directory goes with rm -rf.
    assert sorted(os.listdir(shared_dir)) == ["plain", "sub"]
    removed = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "rm", "-rf", "sub"],
        cwd=shared_dir,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        check=False,
    )
    assert removed.returncode == 0, removed.stderr
    assert os.listdir(shared_dir) == ["plain"]


FILL = """
import json, os, sys
MIB = 1 << 20
fd = os.open("fill", os.O_CREAT | os.O_WRONLY, 0o644)
block = bytes(range(256)) * 4096
counts = []
error = None
while sum(counts) < (1 << 30):
    try:
        n = os.pwrite(fd, block, sum(counts))
    except OSError as e:
        error = e.errno
        break
    counts.append(n)
    if n < MIB:
        # What write(2) promises: the rest of a short write fails.
        try:
            os.pwrite(fd, block[n:], sum(counts))
        except OSError as e:
            error = e.errno
        break
os.fsync(fd)
size = os.fstat(fd).st_size
os.close(fd)
print(json.dumps({"counts": counts, "error": error, "size": size}))
"""


def test_a_write_that_fills_the_disk_reports_what_it_wrote(
    shared_mount: Mounted, shared_dir: Path
) -> None:
    # Half a MiB more than whole MiBs free: the last 1 MiB write fills the
    # disk part way.
    space = shared_mount.cluster.root / "data"
    free = _free(space)
    pad = space / "pad"
    over = (free - MIB // 2) % MIB
    pad.write_bytes(b"\0" * over)
    try:
        done = as_nobody(shared_dir, FILL)
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        counts = out["counts"]
        assert out["error"] == errno.ENOSPC, out
        assert counts and 0 < counts[-1] < MIB, out
        # The file holds exactly the bytes the writes reported, and they
        # are the program's.
        assert out["size"] == sum(counts), out
        with (shared_dir / "fill").open("rb") as f:
            head = f.read(sum(counts))
        assert head == (bytes(range(256)) * 4096 * len(counts))[: sum(counts)]
    finally:
        (shared_dir / "fill").unlink(missing_ok=True)
        pad.unlink()


DF = """
import json, os
st = os.statvfs(".")
print(json.dumps({"size": st.f_blocks * st.f_frsize, "free": st.f_bfree * st.f_frsize}))
"""


def test_df_counts_a_file_system_shared_by_daemons_once(
    shared_mount: Mounted, shared_dir: Path
) -> None:
    done = as_nobody(shared_dir, DF)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    data = os.statvfs(shared_mount.cluster.root / "data")
    assert len(shared_mount.cluster.names) == 4
    assert seen["size"] == data.f_blocks * data.f_frsize
    assert seen["size"] == SMALL_MIB * MIB
    assert 0 < seen["free"] <= seen["size"]
    # df itself, as the mount's owner types it (df resolves the mount
    # point, which is under root's private temporary directory).
    df = subprocess.run(
        ["df", "-B1", "--output=size", "."],
        cwd=shared_dir,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        check=False,
    )
    assert df.returncode == 0, df.stderr
    assert df.stdout.split()[-1] == str(SMALL_MIB * MIB)


def _free(path: Path) -> int:
    """Bytes free to an unprivileged writer on the file system of ``path``."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize
