"""Unmounting a mount whose serving process died, whatever the way it died.

``fusermount3``'s ``auto_unmount`` watcher unmounts after the mount process
dies, but only if opening the mount point then fails with "Transport
endpoint is not connected": woken in the instant before the dead process's
FUSE device is released, the open succeeds, the watcher takes the mount for
served and exits, and the dead mount stays. The guard closes that gap.

The mount process starts the guard (``python -m benchfs.mount.guard``, in
its own session: signals to the mount's process group leave it alone)
before it opens the FUSE device, and keeps the only write end of a pipe
whose read end the guard holds. It writes the mount point to the pipe at
once (``0 POINT``), and once the mount is live the mount's unique id
(benchfs/mount/mountid.py) with it (``ID POINT``). End of file on the pipe
means the mount process is gone; if the mount it announced is still at
the mount point (the same unique id: a later mount there is never
touched) and its connection is dead, the guard detaches it (``fusermount3
-u -z``) and says so on its stderr, the mount's log. After a clean exit
the mount is already gone and the guard just exits.

A guard never told the id (the mount process killed in the moment between
the mount going live and its announcement, or a kernel without unique
mount ids, before Linux 6.8) detaches the BenchFS mount at its point only
if that mount's connection is dead: a live mount there, a later one
included, answers and is left alone.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchfs.mount.cleanup import unmount_now
from benchfs.mount.mountid import unique_mount_id
from benchfs.mount.mountinfo import MOUNTINFO, MountEntry, find_mount, parse_mountinfo

#: How long after the mount process's end its connection may still answer:
#: the kernel ends it a moment after the pipe's end of file.
DEAD_WITHIN_S = 10.0
#: A stat of a served mount answers in far less; one that does not is not dead.
STAT_DEADLINE_S = 5.0
POLL_S = 0.05
#: Polling for the mount to appear: the mount is unguarded until it is told.
ANNOUNCE_POLL_S = 0.01
#: The guard's process name (``/proc/PID/comm``, ``ps``) once told which mount
#: it looks after: a test waits for it.
ARMED_NAME = "benchfs-guarded"
#: The guard's whole life after the mount process's end, whatever hangs.
LIFETIME_S = 60.0
DEAD_ERRNOS = (errno.ENOTCONN, errno.ECONNABORTED)


class MountGuard:
    """The mount process's side: the guard process and the pipe's write end."""

    def __init__(self, mountpoint: Path) -> None:
        read_end, self._write_end = os.pipe()  # both close-on-exec
        try:
            # No mount point in the argv: a run's leftover checks look for its
            # token in command lines, and the guard may outlive the mount
            # process by a moment.
            self.process = subprocess.Popen(
                [sys.executable, "-m", "benchfs.mount.guard", str(read_end)],
                pass_fds=(read_end,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            os.close(read_end)
        # As mountinfo will spell it: resolved now, before anything is mounted there.
        self._write(0, str(mountpoint.resolve()))
        self._announced = False

    def announce(self, entry: MountEntry) -> None:
        """Tell the guard which mount to look after (once it is live)."""
        mount_id = unique_mount_id(entry.mount_point)
        if not self._announced and mount_id is not None:
            self._write(mount_id, entry.mount_point)
            self._announced = True

    def _write(self, mount_id: int, mountpoint: str) -> None:
        os.write(self._write_end, f"{mount_id} {mountpoint}\n".encode())

    def close(self) -> None:
        """End of file for the guard, as the mount process's death would be."""
        if self._write_end >= 0:
            os.close(self._write_end)
            self._write_end = -1


def announce_when_mounted(guard: MountGuard, mountpoint: Path, stop: threading.Event) -> None:
    """Announce the BenchFS mount at ``mountpoint`` to ``guard`` once it appears."""
    while not stop.wait(ANNOUNCE_POLL_S):
        entry = find_mount(mountpoint)
        if entry is not None and entry.is_benchfs:
            guard.announce(entry)
            return


def _stat_errno(mountpoint: Path) -> int | None:
    """The errno of a stat of ``mountpoint`` (0: it answered; None: no answer in time)."""
    result: list[int] = []

    def probe() -> None:
        try:
            os.stat(mountpoint)
            result.append(0)
        except OSError as error:
            result.append(error.errno or 0)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(STAT_DEADLINE_S)
    return result[0] if result else None


def _still_ours(mountpoint: Path, mount_id: int) -> bool:
    """The BenchFS mount at ``mountpoint`` (as mountinfo spells it: no path
    is resolved through the mount) is the one announced (any, for id 0)."""
    here = [e for e in parse_mountinfo(MOUNTINFO.read_text()) if e.mount_point == str(mountpoint)]
    if not here or not here[-1].is_benchfs:
        return False
    return mount_id == 0 or unique_mount_id(str(mountpoint)) == mount_id


def _read_announcements(fd: int) -> str | None:
    """The last announcement (``ID POINT``) before end of file, if any; the
    guard calls itself ``ARMED_NAME`` once told an id."""
    data, last = b"", None
    while chunk := os.read(fd, 4096):
        *lines, data = (data + chunk).split(b"\n")
        for line in lines:
            last = line.decode(errors="surrogateescape")
            if not last.startswith("0 "):
                with contextlib.suppress(OSError):
                    Path("/proc/self/comm").write_text(ARMED_NAME)
    return last


def guard(read_end: int) -> None:
    """Wait for the mount process's end, then detach its mount if it was left dead."""
    last = _read_announcements(read_end)
    os.close(read_end)
    words = [] if last is None else last.split(" ", 1)
    if len(words) != 2 or not words[0].isdigit():
        return  # told nothing
    mount_id, mountpoint = int(words[0]), Path(words[1])
    threading.Timer(LIFETIME_S, os._exit, args=(1,)).start()
    give_up = time.monotonic() + DEAD_WITHIN_S
    while _still_ours(mountpoint, mount_id):
        if _stat_errno(mountpoint) in DEAD_ERRNOS:
            # Recheck: the watcher may have unmounted it and a new mount come.
            if not _still_ours(mountpoint, mount_id):
                return
            problem = unmount_now(mountpoint, lazy=True)
            print(
                f"benchfs mount guard: the mount process is gone and left its mount at "
                f"{mountpoint} dead: {problem or 'detached it (fusermount3 -u -z)'}",
                file=sys.stderr,
                flush=True,
            )
            return
        if time.monotonic() >= give_up:
            return  # still served (the device is held elsewhere): not ours to end
        time.sleep(POLL_S)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].isdigit():
        print("usage: python -m benchfs.mount.guard READ_FD", file=sys.stderr)
        return 2
    guard(int(argv[0]))
    return 0


if __name__ == "__main__":
    # The threads probing a mount that does not answer must not hold up the exit.
    code = main(sys.argv[1:])
    sys.stderr.flush()
    os._exit(code)
