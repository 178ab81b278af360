"""What a hostile local user does to a job's shared-memory transport: send
datagrams to the abstract unix sockets that ``ss -lx`` lists for the daemons
(UCX's wake-up sockets; docs/TRANSPORT.md, "The wake-up sockets")."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

NOBODY = 65534

#: Sends random datagrams to every abstract name given, round robin, until
#: killed or ``count`` are sent (0: no end); prints how many it sent.
FLOOD = r"""
import os, signal, socket, sys
count = int(sys.argv[1])
names = [b"\0" + n.encode() for n in sys.argv[2:]]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setblocking(False)
sent = 0
stop = False
def end(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, end)
while not stop and (count == 0 or sent < count):
    for n in names:
        try:
            s.sendto(os.urandom(16), n)
            sent += 1
        except (BlockingIOError, ConnectionRefusedError, FileNotFoundError):
            pass
print(sent, flush=True)
"""


def wake_up_sockets(pids: Iterable[int]) -> list[str]:
    """The abstract names of the unix datagram sockets the processes ``pids``
    hold: what ``ss -lxp`` shows a user for them (without the leading ``@``)."""
    inodes: set[str] = set()
    for pid in pids:
        fd_dir = Path(f"/proc/{pid}/fd")
        for fd in fd_dir.iterdir():
            try:
                link = os.readlink(fd)
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[len("socket:[") : -1])
    names = []
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        # Num RefCount Protocol Flags Type St Inode Path; type 0002: datagram.
        abstract = len(fields) >= 8 and fields[7].startswith("@")
        if abstract and fields[4] == "0002" and fields[6] in inodes:
            names.append(fields[7][1:])
    return names


def flood_as_nobody(names: list[str], count: int = 0) -> subprocess.Popen[str]:
    """Starts the sender as uid 65534 (it needs nothing of the job's)."""
    setpriv = shutil.which("setpriv")
    assert setpriv is not None, "setpriv (util-linux) is not installed"
    return subprocess.Popen(
        [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
         sys.executable, "-c", FLOOD, str(count), *names],
        cwd="/",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
