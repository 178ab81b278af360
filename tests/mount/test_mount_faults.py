"""Failures under a mount: a daemon killed, the mount process killed or
stopped. Programs get an errno, never a hang, and no mount is left."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_cluster import CHUNK, Cluster
from mount_support import HANG_GUARD_S, Mounted, skip_without_fuse, wait_for

from benchfs.mount import MountSettings, mount_in_background

pytestmark = pytest.mark.core_claim

RPC_DEADLINE_S = 5.0

BUSY_WRITER = """
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o600)
block = bytes(range(256)) * 4096
offset = 0
try:
    while True:
        offset += os.pwrite(fd, block, offset)
        if offset % (4 << 20) == 0:
            print("progress", offset, flush=True)
except OSError as e:
    print("errno", e.errno, flush=True)
    sys.exit(3)
"""


@pytest.fixture
def fresh_mount(tmp_path: Path) -> Iterator[Mounted]:
    skip_without_fuse()
    m = Mounted(Cluster(tmp_path, "shm"), tmp_path, MountSettings(rpc_deadline_s=RPC_DEADLINE_S))
    try:
        m.start()
        yield m
    finally:
        m.stop()


def fusermount_watchers(point: Path) -> list[int]:
    """fusermount3 processes still watching ``point`` (auto_unmount)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"fusermount3") and str(point).encode() in argv:
            pids.append(int(entry.name))
    return pids


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_daemon_killed_under_a_busy_mount_gives_eio_and_the_mount_unmounts(
    fresh_mount: Mounted,
) -> None:
    path = fresh_mount.point / "busy"
    writer = subprocess.Popen(
        [sys.executable, "-c", BUSY_WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None
        first = writer.stdout.readline()
        assert first.startswith("progress"), first
        fresh_mount.cluster.kill("node1")
        out, _ = writer.communicate(timeout=HANG_GUARD_S)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert writer.returncode == 3, out
    reported = int(out.strip().splitlines()[-1].split()[1])
    assert reported in (errno.EIO, errno.ETIMEDOUT), out
    mount_process = fresh_mount.process
    assert mount_process is not None
    fresh_mount.stop()
    assert not fresh_mount.is_mounted()
    assert mount_process.returncode is not None
    wait_for(lambda: not fusermount_watchers(fresh_mount.point), "fusermount3 exit")


def test_sigkill_of_the_mount_process_leaves_no_mount(fresh_mount: Mounted) -> None:
    (fresh_mount.point / "before").write_bytes(b"x")
    process = fresh_mount.process
    assert process is not None
    process.popen.send_signal(signal.SIGKILL)
    process.popen.wait(timeout=HANG_GUARD_S)
    wait_for(lambda: not fresh_mount.is_mounted(), "automatic unmount")
    wait_for(lambda: not fusermount_watchers(fresh_mount.point), "fusermount3 exit")
    assert os.listdir(fresh_mount.point) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_unmounts_and_exits_cleanly(
    fresh_mount: Mounted, signum: signal.Signals
) -> None:
    process = fresh_mount.process
    assert process is not None
    process.popen.send_signal(signum)
    assert process.popen.wait(timeout=HANG_GUARD_S) == 0
    assert not fresh_mount.is_mounted()
    wait_for(lambda: not fusermount_watchers(fresh_mount.point), "fusermount3 exit")


def test_a_stop_signal_with_a_file_held_open_ends_the_connection(fresh_mount: Mounted) -> None:
    path = fresh_mount.point / "held"
    path.write_bytes(b"held open")
    fd = os.open(path, os.O_RDONLY)
    try:
        process = fresh_mount.process
        assert process is not None
        process.popen.send_signal(signal.SIGTERM)
        assert process.popen.wait(timeout=HANG_GUARD_S) == 0
        assert not fresh_mount.is_mounted()
        with pytest.raises(OSError) as gone:
            os.pread(fd, 4, 0)
        assert gone.value.errno in (errno.ENOTCONN, errno.EIO, errno.ECONNABORTED)
    finally:
        # The connection is gone: close reports it too.
        with contextlib.suppress(OSError):
            os.close(fd)
    wait_for(lambda: not fusermount_watchers(fresh_mount.point), "fusermount3 exit")


def test_a_read_only_mount_reads_and_refuses_changes(tmp_path: Path) -> None:
    skip_without_fuse()
    m = Mounted(Cluster(tmp_path, "shm"), tmp_path, MountSettings(read_only=True))
    try:
        m.cluster.start()
        m.cluster.wait_registered(*m.cluster.names)
        client = m.cluster.client()
        handle = client.create("seeded", 0o644, True)
        client.write(handle, 0, b"seeded data")
        client.close(handle)
        del client
        m.process = mount_in_background(m.cluster.registry, m.point, m.settings, m.log)
        assert (m.point / "seeded").read_bytes() == b"seeded data"
        with pytest.raises(OSError) as refused:
            (m.point / "new").write_bytes(b"x")
        assert refused.value.errno == errno.EROFS
        with pytest.raises(OSError) as refused:
            os.unlink(m.point / "seeded")
        assert refused.value.errno == errno.EROFS
    finally:
        m.stop()


def test_a_stopped_daemon_gives_etimedout_within_the_deadline(fresh_mount: Mounted) -> None:
    path = fresh_mount.point / "spread"
    data = bytes(range(256)) * (8 * CHUNK // 256)  # eight chunks: every daemon holds some
    path.write_bytes(data)
    stopped = fresh_mount.cluster.procs["node2"]
    stopped.send_signal(signal.SIGSTOP)
    try:
        with pytest.raises(OSError) as late:
            path.read_bytes()
        assert late.value.errno in (errno.ETIMEDOUT, errno.EIO)
    finally:
        stopped.send_signal(signal.SIGCONT)
    assert path.read_bytes() == data
