"""The FUSE mount of a running cluster: its settings, starting it in the
background, telling a BenchFS mount from others, and unmounting it."""

from benchfs.mount.control import mount_in_background, serve_in_foreground, unmount
from benchfs.mount.mountinfo import MountEntry, find_mount
from benchfs.mount.settings import MountSettings

__all__ = [
    "MountEntry",
    "MountSettings",
    "find_mount",
    "mount_in_background",
    "serve_in_foreground",
    "unmount",
]
