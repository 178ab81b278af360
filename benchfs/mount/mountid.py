"""The kernel's unique id of the mount at a path (``statx`` with
``STATX_MNT_ID_UNIQUE``, Linux 6.8), read without a request to the file
system: it answers for a FUSE mount whose server is dead or hung.

The ids of ``/proc/self/mountinfo`` (and the device numbers) are reused
at once: a mount made after another was unmounted often gets both of
them; the unique id is never reused.
"""

from __future__ import annotations

import ctypes
import os

AT_FDCWD = -100
AT_NO_AUTOMOUNT = 0x800
AT_STATX_DONT_SYNC = 0x4000
STATX_MNT_ID_UNIQUE = 0x4000
#: struct statx: 256 bytes, ``stx_mnt_id`` (u64) at offset 144.
STATX_SIZE = 256
MNT_ID_OFFSET = 144

_libc = ctypes.CDLL(None, use_errno=True)


def unique_mount_id(path: str) -> int | None:
    """The unique id of the mount ``path`` is on; None if the kernel cannot tell."""
    buffer = ctypes.create_string_buffer(STATX_SIZE)
    flags = AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC
    if _libc.statx(AT_FDCWD, os.fsencode(path), flags, STATX_MNT_ID_UNIQUE, buffer) != 0:
        return None
    mask = int.from_bytes(buffer.raw[0:4], "little")
    if not mask & STATX_MNT_ID_UNIQUE:
        return None
    return int.from_bytes(buffer.raw[MNT_ID_OFFSET : MNT_ID_OFFSET + 8], "little")
