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

from benchfs.cluster.processes import kill_group, wait_process
from benchfs.mount.cleanup import unmount_now
from benchfs.mount.control import mount_in_background, unmount
from benchfs.mount.guard import ARMED_NAME, MountGuard
from benchfs.mount.mountid import unique_mount_id
from benchfs.mount.mountinfo import find_mount
from benchfs.mount.settings import MountSettings

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
    settings = MountSettings(rpc_deadline_s=RPC_DEADLINE_S)
    with Mounted(Cluster(tmp_path, "shm"), tmp_path, settings) as m:
        yield m


def processes() -> Iterator[tuple[Path, list[bytes]]]:
    """Every process's ``/proc`` entry and argv (one that ends meanwhile is left out)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            yield entry, (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue


def fusermount_watchers(point: Path) -> list[int]:
    """fusermount3 processes still watching ``point`` (auto_unmount)."""
    return [
        int(entry.name)
        for entry, argv in processes()
        if argv and argv[0].endswith(b"fusermount3") and str(point).encode() in argv
    ]


def running(pid: int) -> bool:
    """``pid`` exists and is no zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def mount_guards(mount_pid: int) -> list[int]:
    """The mount guards (benchfs/mount/guard.py) started by process ``mount_pid``."""
    pids = []
    for entry, argv in processes():
        if b"benchfs.mount.guard" not in argv:
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if parent == mount_pid:
            pids.append(int(entry.name))
    return pids


def armed(pid: int) -> bool:
    """The guard ``pid`` has been told which mount it looks after."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == ARMED_NAME
    except OSError:
        return False


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def leave_unguarded(mount_pid: int, point: Path) -> None:
    """Kill the mount's own guard and fusermount3's watcher: nothing but a
    test's guard is left to unmount it."""
    guards = mount_guards(mount_pid)
    assert len(guards) == 1, guards
    kill_all(guards)
    kill_all(fusermount_watchers(point))
    wait_for(lambda: not fusermount_watchers(point), "fusermount3 death")
    wait_for(lambda: not any(map(running, guards)), "the mount's own guard's death")


def end_guard(guard: MountGuard) -> None:
    """A test's guard ended, however the test went."""
    guard.close()
    if guard.process.poll() is None:
        guard.process.kill()
    guard.process.wait()


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
    guards = mount_guards(process.pid)
    assert len(guards) == 1, guards
    wait_for(lambda: armed(guards[0]), "the guard told of the mount")
    process.popen.send_signal(signal.SIGKILL)
    process.popen.wait(timeout=HANG_GUARD_S)
    wait_for(lambda: not fresh_mount.is_mounted(), "automatic unmount")
    wait_for(lambda: not fusermount_watchers(fresh_mount.point), "fusermount3 exit")
    wait_for(lambda: not running(guards[0]), "mount guard exit")
    assert os.listdir(fresh_mount.point) == []


def test_the_guard_unmounts_when_the_mount_process_and_its_watcher_are_killed(
    fresh_mount: Mounted,
) -> None:
    """Without fusermount3's watcher only the guard can unmount the dead mount."""
    process = fresh_mount.process
    assert process is not None
    guards = mount_guards(process.pid)
    assert len(guards) == 1, guards
    wait_for(lambda: armed(guards[0]), "the guard told of the mount")
    watchers = fusermount_watchers(fresh_mount.point)
    assert watchers, "no fusermount3 auto_unmount watcher is running"
    kill_all(watchers)
    wait_for(lambda: not fusermount_watchers(fresh_mount.point), "fusermount3 death")
    assert fresh_mount.is_mounted()
    process.popen.send_signal(signal.SIGKILL)
    process.popen.wait(timeout=HANG_GUARD_S)
    wait_for(lambda: not fresh_mount.is_mounted(), "unmount by the guard")
    wait_for(lambda: not running(guards[0]), "mount guard exit")
    assert os.listdir(fresh_mount.point) == []
    assert "benchfs mount guard: the mount process is gone" in fresh_mount.log.read_text()


def test_a_guard_leaves_a_later_mount_at_its_point_alone(fresh_mount: Mounted) -> None:
    point = fresh_mount.point
    stale = MountGuard(point)
    try:
        first = find_mount(point)
        assert first is not None
        first_id = unique_mount_id(str(point))
        if first_id is None:
            pytest.skip("this kernel has no unique mount ids (STATX_MNT_ID_UNIQUE, Linux 6.8)")
        stale.announce(first)
        wait_for(lambda: armed(stale.process.pid), "the guard told of the mount")
        process = fresh_mount.process
        assert process is not None
        unmount(point)
        wait_process(process, HANG_GUARD_S)
        # A later mount at the same point, left dead with no one to unmount it.
        later = mount_in_background(
            fresh_mount.cluster.registry, point, fresh_mount.settings, fresh_mount.log
        )
        try:
            second = find_mount(point)
            assert second is not None
            assert unique_mount_id(str(point)) != first_id
            leave_unguarded(later.pid, point)
            later.popen.send_signal(signal.SIGKILL)
            later.popen.wait(timeout=HANG_GUARD_S)
            stale.close()
            assert stale.process.wait(timeout=HANG_GUARD_S) == 0
            assert find_mount(point) == second
        finally:
            if later.returncode is None:
                kill_group(later)
            assert unmount_now(point, lazy=True) is None
    finally:
        end_guard(stale)


def test_a_guard_never_told_the_mounts_id_detaches_it_once_dead(fresh_mount: Mounted) -> None:
    """As when the mount process dies between the mount going live and its
    announcement, or on a kernel without unique mount ids: the guard knows
    only the mount point, and detaches the BenchFS mount there once it is
    dead (a live one answers and is left alone)."""
    point = fresh_mount.point
    blind = MountGuard(point)  # told the mount point, never the id
    try:
        process = fresh_mount.process
        assert process is not None
        leave_unguarded(process.pid, point)
        assert not armed(blind.process.pid)
        # Alive, the mount answers: the blind guard's end leaves it be.
        spare = MountGuard(point)
        spare.close()
        assert spare.process.wait(timeout=HANG_GUARD_S) == 0
        assert fresh_mount.is_mounted()
        process.popen.send_signal(signal.SIGKILL)
        process.popen.wait(timeout=HANG_GUARD_S)
        assert fresh_mount.is_mounted()  # dead, and still there
        blind.close()
        assert blind.process.wait(timeout=HANG_GUARD_S) == 0
        assert not fresh_mount.is_mounted()
        assert os.listdir(point) == []
    finally:
        end_guard(blind)
        if find_mount(point) is not None:
            unmount_now(point, lazy=True)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_unmounts_and_exits_128_plus_it(
    fresh_mount: Mounted, signum: signal.Signals
) -> None:
    process = fresh_mount.process
    assert process is not None
    guards = mount_guards(process.pid)
    assert len(guards) == 1, guards
    process.popen.send_signal(signum)
    # Unmounted, then 128 + the signal, as any command a signal stopped.
    assert process.popen.wait(timeout=HANG_GUARD_S) == 128 + signum
    assert not fresh_mount.is_mounted()
    wait_for(lambda: not fusermount_watchers(fresh_mount.point), "fusermount3 exit")
    wait_for(lambda: not running(guards[0]), "mount guard exit")
    assert "benchfs mount guard" not in fresh_mount.log.read_text()


def test_a_stop_signal_with_a_file_held_open_ends_the_connection(fresh_mount: Mounted) -> None:
    path = fresh_mount.point / "held"
    path.write_bytes(b"held open")
    fd = os.open(path, os.O_RDONLY)
    try:
        process = fresh_mount.process
        assert process is not None
        process.popen.send_signal(signal.SIGTERM)
        assert process.popen.wait(timeout=HANG_GUARD_S) == 128 + signal.SIGTERM
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
