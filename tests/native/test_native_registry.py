"""``benchfs_native.read_registry``: the engine's own reader of registry records
(a real daemon's record is read in tests/node/test_node_programs.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from node.registry_records import write_record

import benchfs_native


def test_records_sorted_by_node_id_temp_and_foreign_files_skipped(tmp_path: Path) -> None:
    write_record(tmp_path, "b", 1, pid=11, host="h2")
    write_record(tmp_path, "a", 0, pid=10, host="h1")
    (tmp_path / ".c.json.tmp.1.0").write_text("{")
    (tmp_path / "notes.txt").write_text("not a record")
    records = benchfs_native.read_registry(str(tmp_path))
    assert [(r["node_name"], r["node_id"], r["pid"], r["host"]) for r in records] == [
        ("a", 0, 10, "h1"),
        ("b", 1, 11, "h2"),
    ]
    assert records[0]["worker_address"] == b"\x00\xff"
    assert set(records[0]) == set(benchfs_native.RegistryRecord.__annotations__)


def test_a_corrupt_record_names_its_file(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"node_name": "a"')
    with pytest.raises(ValueError, match=r"a\.json"):
        benchfs_native.read_registry(str(tmp_path))


def test_two_records_with_one_node_id_name_both_files(tmp_path: Path) -> None:
    write_record(tmp_path, "a", 3)
    write_record(tmp_path, "b", 3)
    with pytest.raises(ValueError, match=r"a\.json and .*b\.json both claim node_id 3"):
        benchfs_native.read_registry(str(tmp_path))


def test_a_missing_registry_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "none"))):
        benchfs_native.read_registry(str(tmp_path / "none"))
