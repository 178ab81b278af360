"""Finding a run's BenchFS mounts under a directory in mountinfo, deepest first."""

from __future__ import annotations

from pathlib import Path

from benchfs.mount.cleanup import benchfs_mounts, mounts_under

ROOT = "/tmp/benchfs-0/benchfs-12-ab12cd-mnt-p0"
# Lines as proc(5) shows them: optional fields before "-", octal escapes in paths.
MOUNTINFO = f"""\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
61 22 0:52 / {ROOT}/local0 rw,nosuid,nodev shared:30 - fuse.benchfs benchfs rw,user_id=0
62 22 0:53 / /tmp/with\\040space/m rw,nosuid,nodev - fuse.benchfs benchfs rw
63 61 0:54 / {ROOT}/local0/deeper rw - fuse.benchfs benchfs rw
64 22 0:55 / {ROOT}/tmpfs rw - tmpfs tmpfs rw
65 22 0:56 / {ROOT}/other rw - fuse.sshfs host:/x rw
"""


def test_only_benchfs_mounts_under_the_root_deepest_first() -> None:
    under = mounts_under(Path(ROOT), MOUNTINFO)
    assert [entry.mount_point for entry in under] == [f"{ROOT}/local0/deeper", f"{ROOT}/local0"]
    assert mounts_under(Path(ROOT.replace("-p0", "-p1")), MOUNTINFO) == []
    assert [e.mount_point for e in benchfs_mounts(MOUNTINFO)][1] == "/tmp/with space/m"


def test_this_host_has_no_benchfs_mount_under_a_fresh_directory(tmp_path: Path) -> None:
    assert mounts_under(tmp_path) == []
