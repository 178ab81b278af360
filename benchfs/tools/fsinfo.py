"""What lies behind a directory: file system type, mount, device, network server.

The mount is found in /proc/self/mountinfo by the directory's device number
and longest mount-point prefix. Block devices are resolved through sysfs:
a partition to its disk, device-mapper to the disks below it, a loop device
to its backing file (and the disk that holds that file), so that iostat
watches the disks that do the work.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from benchfs.errors import ToolError
from benchfs.tools.mountinfo import MountEntry, parse_mountinfo

# File systems whose data lives on another machine.
NETWORK_FS_TYPES = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "lustre",
        "gpfs",
        "beegfs",
        "ceph",
        "fuse.ceph-fuse",
        "glusterfs",
        "fuse.glusterfs",
        "fuse.sshfs",
        "9p",
        "afs",
        "orangefs",
        "pvfs2",
        "fuse.juicefs",
        "wekafs",
    }
)
# File systems with no block device underneath.
MEMORY_FS_TYPES = frozenset({"tmpfs", "ramfs", "devtmpfs", "hugetlbfs"})
_SERVER_OPTION = re.compile(r"(?:^|,)(?:addr|mountaddr)=([^,]+)")


@dataclass(frozen=True)
class FsInfo:
    directory: str
    mount_point: str
    fs_type: str
    source: str
    network: bool
    server: str | None = None
    device: str | None = None  # kernel name of the mounted block device (vda1, dm-0, loop3)
    disks: tuple[str, ...] = ()  # whole disks iostat should watch
    loop_backing_file: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def describe(self) -> str:
        """One plain sentence for a report."""
        if self.network:
            server = f" served by {self.server}" if self.server else ""
            return (
                f"{self.directory} is on a NETWORK file system ({self.fs_type}){server}, "
                f"export {self.source}, mounted at {self.mount_point}"
            )
        text = f"{self.directory} is on {self.fs_type} mounted at {self.mount_point}"
        if self.loop_backing_file:
            text += f", loop device {self.device} backed by file {self.loop_backing_file}"
        elif self.device:
            text += f", device /dev/{self.device}"
        if self.disks and self.disks != (self.device,):
            text += f" (disks: {', '.join(self.disks)})"
        if not self.disks:
            text += ", no block device (iostat cannot watch it)"
        return text


def find_mount(directory: Path, major_minor: str, entries: list[MountEntry]) -> MountEntry | None:
    """The mount holding ``directory``: longest mount point that is a prefix of it,
    preferring mounts of the same device; later lines win ties (they shadow earlier ones).
    """
    path = str(directory)

    def holds(entry: MountEntry) -> bool:
        point = entry.mount_point.rstrip("/")
        return point == "" or path == point or path.startswith(point + "/")

    candidates = [entry for entry in entries if holds(entry)]
    same_device = [entry for entry in candidates if entry.major_minor == major_minor]
    pool = same_device or candidates
    best: MountEntry | None = None
    for entry in pool:
        if best is None or len(entry.mount_point) >= len(best.mount_point):
            best = entry
    return best


def network_server(entry: MountEntry) -> str | None:
    """The server of a network mount: from ``addr=`` or the part of the source before ':'."""
    match = _SERVER_OPTION.search(entry.super_options) or _SERVER_OPTION.search(entry.options)
    if match:
        return match.group(1)
    if entry.source.startswith("//"):  # CIFS: //server/share
        return entry.source[2:].split("/", 1)[0]
    if ":" in entry.source:
        return entry.source.rsplit(":", 1)[0]
    return None


def inspect_directory(
    directory: Path, *, proc: Path = Path("/proc"), sys: Path = Path("/sys")
) -> FsInfo:
    """Describe the file system and devices behind ``directory``."""
    directory = Path(directory)
    try:
        resolved = directory.resolve(strict=True)
        device_number = os.stat(resolved).st_dev
    except OSError as exc:
        raise ToolError(f"cannot inspect {directory}: {exc.strerror or exc}") from exc
    major_minor = f"{os.major(device_number)}:{os.minor(device_number)}"
    try:
        entries = parse_mountinfo((proc / "self" / "mountinfo").read_text())
    except OSError as exc:
        raise ToolError(f"cannot read {proc}/self/mountinfo: {exc.strerror}") from exc
    entry = find_mount(resolved, major_minor, entries)
    if entry is None:
        raise ToolError(f"no mount found for {directory} (device {major_minor})")
    network = entry.fs_type in NETWORK_FS_TYPES
    if network:
        return FsInfo(
            directory=str(directory),
            mount_point=entry.mount_point,
            fs_type=entry.fs_type,
            source=entry.source,
            network=True,
            server=network_server(entry),
        )
    device = _block_device_name(entry, major_minor, sys)
    notes: list[str] = []
    backing = None
    disks: tuple[str, ...] = ()
    if device is not None:
        backing = _loop_backing_file(device, sys)
        disks = disks_below(device, sys)
        if backing:
            host_disks = _disks_of_file(Path(backing), proc, sys)
            if host_disks:
                notes.append(f"backing file {backing} lives on {', '.join(host_disks)}")
    elif entry.fs_type in MEMORY_FS_TYPES:
        notes.append(f"{entry.fs_type} keeps data in memory; results say nothing about disks")
    return FsInfo(
        directory=str(directory),
        mount_point=entry.mount_point,
        fs_type=entry.fs_type,
        source=entry.source,
        network=False,
        device=device,
        disks=disks,
        loop_backing_file=backing,
        notes=tuple(notes),
    )


def _block_device_name(entry: MountEntry, major_minor: str, sys: Path) -> str | None:
    # A /dev source names the device even when st_dev is anonymous (btrfs, overlay on a disk).
    if entry.source.startswith("/dev/"):
        try:
            rdev = os.stat(entry.source).st_rdev
            name = _sysfs_name(f"{os.major(rdev)}:{os.minor(rdev)}", sys)
            if name:
                return name
        except OSError:
            pass
    return _sysfs_name(major_minor, sys)


def _sysfs_name(major_minor: str, sys: Path) -> str | None:
    link = sys / "dev" / "block" / major_minor
    if not link.exists():
        return None
    return link.resolve().name


def disks_below(device: str, sys: Path) -> tuple[str, ...]:
    """Whole disks under ``device``: itself, its parent disk, or device-mapper slaves."""
    node = sys / "class" / "block" / device
    if not node.exists():
        return ()
    resolved = node.resolve()
    if (resolved / "partition").exists():
        return (resolved.parent.name,)
    slaves = resolved / "slaves"
    if slaves.is_dir() and any(slaves.iterdir()):
        found: list[str] = []
        for slave in sorted(slaves.iterdir()):
            for disk in disks_below(slave.name, sys):
                if disk not in found:
                    found.append(disk)
        return tuple(found)
    return (device,)


def _loop_backing_file(device: str, sys: Path) -> str | None:
    backing = sys / "class" / "block" / device / "loop" / "backing_file"
    try:
        return backing.read_text().strip() or None
    except OSError:
        return None


def _disks_of_file(path: Path, proc: Path, sys: Path) -> tuple[str, ...]:
    try:
        info = inspect_directory(path.parent, proc=proc, sys=sys)
    except ToolError:
        return ()
    return info.disks
