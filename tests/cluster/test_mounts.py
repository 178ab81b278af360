"""/proc/self/mountinfo as the kernel writes it, and finding a run's mounts in it."""

from __future__ import annotations

from pathlib import Path

from benchfs.cluster.mounts import current_mounts, mount_at, mounts_under, parse_mountinfo

# Lines as proc(5) shows them: optional fields before "-", octal escapes in paths.
MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
61 22 0:52 / /tmp/benchfs-0/benchfs-12-ab12cd-mnt-p0/local0 rw,nosuid,nodev shared:30 - \
fuse.benchfs benchfs rw,user_id=0,group_id=0
62 22 0:53 / /tmp/with\\040space/m rw,nosuid,nodev - fuse.benchfs benchfs rw
63 61 0:54 / /tmp/benchfs-0/benchfs-12-ab12cd-mnt-p0/local0/deeper rw - fuse.other src rw
64 22 0:55 / /tmp/benchfs-0/benchfs-12-ab12cd-mnt-p0/tmpfs rw - tmpfs tmpfs rw
this line is not one
"""


def test_mountinfo_lines_are_read_with_their_escapes() -> None:
    mounts = parse_mountinfo(MOUNTINFO)
    assert [str(m.mount_point) for m in mounts] == [
        "/",
        "/tmp/benchfs-0/benchfs-12-ab12cd-mnt-p0/local0",
        "/tmp/with space/m",
        "/tmp/benchfs-0/benchfs-12-ab12cd-mnt-p0/local0/deeper",
        "/tmp/benchfs-0/benchfs-12-ab12cd-mnt-p0/tmpfs",
    ]
    assert (mounts[1].fs_type, mounts[1].source, mounts[1].is_fuse) == (
        "fuse.benchfs",
        "benchfs",
        True,
    )
    assert not mounts[0].is_fuse and not mounts[4].is_fuse


def test_the_fuse_mounts_under_a_root_come_deepest_first() -> None:
    mounts = parse_mountinfo(MOUNTINFO)
    root = Path("/tmp/benchfs-0/benchfs-12-ab12cd-mnt-p0")
    under = mounts_under(root, mounts)
    assert [m.mount_point.name for m in under] == ["deeper", "local0"]  # tmpfs is not FUSE
    assert mounts_under(Path("/tmp/benchfs-0/benchfs-12-ab12cd-mnt-p1"), mounts) == []
    found = mount_at(Path("/tmp/with space/m"), mounts)
    assert found is not None and found.fs_type == "fuse.benchfs"


def test_this_host_s_mounts_are_read() -> None:
    root = mount_at(Path("/"))
    assert root is not None  # every mount namespace has its root
    assert any(mount.mount_point == Path("/proc") for mount in current_mounts())
