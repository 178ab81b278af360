"""A run's mount record: per node, the ready record its mount program wrote, or
only the mount point of a mount that never went live; read back as written."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from analysis.manifest import MountNode, MountRecord
from benchfs.mount.run_mount import READY, MountReady
from benchfs.mount.settings import MountSettings

LIVE = MountReady(
    node="n0", hostname="h0", pid=4242, mount_point="/r/n0", fs_type="fuse.benchfs", source="bfs"
)


def test_a_live_node_records_its_ready_file_and_one_never_live_its_mount_point_only() -> None:
    ready = READY.validate_json(READY.dump_json(LIVE))  # as the orchestrator reads the file
    record = MountRecord(
        options=MountSettings(),
        root="/r",
        nodes={
            "n0": MountNode(**READY.dump_python(ready)),
            "n1": MountNode(mount_point="/r/n1"),
        },
    )
    written = json.loads(record.model_dump_json())
    assert written["nodes"] == {"n0": READY.dump_python(LIVE), "n1": {"mount_point": "/r/n1"}}
    assert list(written["nodes"]["n0"]) == list(READY.dump_python(LIVE))  # the same order
    again = MountRecord.model_validate_json(record.model_dump_json())
    assert again.nodes == record.nodes and again.nodes["n0"].pid == 4242


def test_a_node_without_a_mount_point_or_with_an_unknown_field_is_refused() -> None:
    with pytest.raises(ValidationError, match="mount_point"):
        MountNode.model_validate({"fs_type": "fuse.benchfs"})
    with pytest.raises(ValidationError, match="inode"):
        MountNode.model_validate({"mount_point": "/r/n0", "inode": 1})
