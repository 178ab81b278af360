"""What lies behind a directory: real mounts (root disk, tmpfs, loop device) and NFS lines."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from fixtures.loopdisk import LoopDisk

from benchfs.errors import ToolError
from benchfs.tools.fsinfo import (
    disks_below,
    find_mount,
    inspect_directory,
    network_server,
    parse_mountinfo,
)

# Real mountinfo lines of network mounts (proc(5) format), as a client shows them.
NFS_LINES = (
    "36 25 0:45 / /data/shared rw,relatime shared:30 - nfs4 10.10.0.3:/tank1/shared "
    "rw,vers=4.2,rsize=1048576,wsize=1048576,proto=tcp,clientaddr=10.10.0.7,addr=10.10.0.3\n"
    "37 25 0:46 / /home rw,relatime - nfs filer01:/export/home rw,vers=3,mountaddr=10.1.1.1\n"
    "38 25 0:47 / /mnt/share rw - cifs //winsrv/share rw,vers=3.0\n"
    "39 25 0:48 / /mnt/my\\040files rw - ext4 /dev/sdb1 rw\n"
)


def test_root_disk_is_found() -> None:
    info = inspect_directory(Path("/"))
    assert info.mount_point == "/"
    assert not info.network
    if info.device:
        assert (Path("/sys/class/block") / info.device).exists()
        assert info.disks and all((Path("/sys/block") / d).exists() for d in info.disks)
        assert f"/dev/{info.device}" in info.describe()


def test_tmpfs_has_no_disk(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(tmp_path)], check=True)
    try:
        info = inspect_directory(tmp_path)
        assert info.fs_type == "tmpfs" and info.disks == () and info.device is None
        assert "no block device" in info.describe()
        assert any("memory" in note for note in info.notes)
    finally:
        subprocess.run(["umount", "-l", str(tmp_path)], check=False)


def test_loop_device_resolves_to_its_backing_file(
    tmp_path: Path, loop_disk_factory: Callable[..., LoopDisk]
) -> None:
    disk = loop_disk_factory(tmp_path / "mnt", size_mib=64)
    sub = disk.mount_point / "sub"
    sub.mkdir()
    info = inspect_directory(sub)
    loop = Path(disk.loop_device).name
    assert (info.fs_type, info.device, info.disks) == ("ext4", loop, (loop,))
    assert info.mount_point == str(disk.mount_point)
    assert info.loop_backing_file and "benchfs-slowdisk-" in info.loop_backing_file
    assert f"loop device {loop} backed by file" in info.describe()
    assert any("backing file" in note for note in info.notes)


def test_network_mounts_are_said_plainly() -> None:
    entries = parse_mountinfo(NFS_LINES)
    assert [e.fs_type for e in entries] == ["nfs4", "nfs", "cifs", "ext4"]
    assert [network_server(e) for e in entries[:3]] == ["10.10.0.3", "10.1.1.1", "winsrv"]
    assert entries[3].mount_point == "/mnt/my files"  # octal escapes decoded
    nfs = find_mount(Path("/data/shared/repos/x"), "0:45", entries)
    assert nfs is entries[0]
    # A directory on another device under the same prefix picks the longest mount point.
    assert find_mount(Path("/home/u"), "9:9", entries) is entries[1]


def test_missing_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="cannot inspect"):
        inspect_directory(tmp_path / "missing")


def test_partitions_and_device_mapper_map_to_their_disks(tmp_path: Path) -> None:
    # This machine has neither partitions nor device-mapper, so the sysfs layout the
    # kernel shows for them is built here: disks under devices/, links in class/block.
    sysfs = tmp_path / "sys"
    devices = sysfs / "devices"
    (devices / "pci0" / "block" / "sda" / "sda2").mkdir(parents=True)
    (devices / "pci0" / "block" / "sda" / "sda2" / "partition").write_text("2\n")
    (devices / "pci1" / "block" / "nvme0n1").mkdir(parents=True)
    dm = devices / "virtual" / "block" / "dm-0"
    (dm / "slaves").mkdir(parents=True)
    (dm / "slaves" / "sda2").symlink_to(devices / "pci0" / "block" / "sda" / "sda2")
    (dm / "slaves" / "nvme0n1").symlink_to(devices / "pci1" / "block" / "nvme0n1")
    links = sysfs / "class" / "block"
    links.mkdir(parents=True)
    (links / "sda2").symlink_to(devices / "pci0" / "block" / "sda" / "sda2")
    (links / "nvme0n1").symlink_to(devices / "pci1" / "block" / "nvme0n1")
    (links / "dm-0").symlink_to(dm)
    assert disks_below("sda2", sysfs) == ("sda",)
    assert disks_below("nvme0n1", sysfs) == ("nvme0n1",)
    assert disks_below("dm-0", sysfs) == ("nvme0n1", "sda")
    assert disks_below("missing", sysfs) == ()
