"""`benchfs_native.run_posix_metadata_phase` with mdtest's tree (-z, -b) and
its directory rename (-U), checked against the files on disk: the tree's
shape and mode, the items in its directories by mdtest's rule, the tree
gone after its removal; the rename chain leaves every name in place."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

import benchfs_native as bn


def phase(directory: Path, name: str, **arguments: Any) -> dict[str, Any]:
    return dict(bn.run_posix_metadata_phase(directory=str(directory), phase=name, **arguments))


def tree_on_disk(root: Path) -> set[str]:
    return {str(Path(d).relative_to(root.parent)) for d, _, _ in os.walk(root)}


@pytest.mark.parametrize("unique_dir", [True, False], ids=["unique-dir", "shared-dir"])
def test_tree_on_disk(tmp_path: Path, unique_dir: bool) -> None:
    shape: dict[str, Any] = dict(prefix="md/deeper", tree_depth=3, branch_factor=2,
                                 unique_dir=unique_dir, rank=1, ranks=2)  # fmt: skip
    dirs = 1 + 2 + 4 + 8
    made = phase(tmp_path, "create", kind="tree", items=dirs, **shape)
    assert (made["kind"], made["ops"]) == ("tree", dirs)
    base = "tree.1" if unique_dir else "tree.shared"
    root = tmp_path / "md" / "deeper" / base
    on_disk = tree_on_disk(root)
    assert len(on_disk) == dirs
    # mdtest's numbering: the children of d are 2d+1 and 2d+2, 14 under 6 under 2.
    assert f"{base}/{base}.2/{base}.6/{base}.14" in on_disk
    assert {stat.S_IMODE(Path(tmp_path / "md" / "deeper" / d).stat().st_mode)
            for d in on_disk} == {0o700}  # fmt: skip
    # 3 items per directory: item 44 is in directory 14, 0..2 in the root.
    items: dict[str, Any] = dict(items=dirs * 3, items_per_dir=3, **shape)
    assert phase(tmp_path, "create", **items)["ops"] == dirs * 3
    assert sorted(p.name for p in (root / f"{base}.2/{base}.6/{base}.14").iterdir()) == [
        "file.mdtest.1.42", "file.mdtest.1.43", "file.mdtest.1.44",
    ]  # fmt: skip
    assert {p.name for p in root.iterdir() if p.is_file()} == {
        f"file.mdtest.1.{i}" for i in (0, 1, 2)
    }
    assert phase(tmp_path, "stat", **items)["ops"] == dirs * 3
    phase(tmp_path, "remove", **items)
    gone = phase(tmp_path, "remove", kind="tree", items=dirs, **shape)
    assert gone["ops"] == dirs and not root.exists()
    # The prefix stays, as mdtest leaves its -d directory to the end.
    assert list((tmp_path / "md" / "deeper").iterdir()) == []


def test_rename_chain_keeps_every_name(tmp_path: Path) -> None:
    dirs: dict[str, Any] = dict(kind="dir", prefix="mdr", items=5)
    phase(tmp_path, "create", **dirs)
    tree = tmp_path / "mdr" / "tree.0"
    for i in range(5):
        (tree / f"dir.mdtest.0.{i}" / f"was{i}").touch()
    renamed = phase(tmp_path, "rename", **dirs)
    assert (renamed["phase"], renamed["ops"]) == ("rename", 5)
    # mdtest's chain: 0 parked, 1 -> 0, 2 -> 1, 3 -> 2, parked -> 3; 4 untouched.
    held = {p.name: [q.name for q in p.iterdir()] for p in tree.iterdir()}
    assert held == {"dir.mdtest.0.0": ["was1"], "dir.mdtest.0.1": ["was2"],
                    "dir.mdtest.0.2": ["was3"], "dir.mdtest.0.3": ["was0"],
                    "dir.mdtest.0.4": ["was4"]}  # fmt: skip
    for i in range(5):
        next((tree / f"dir.mdtest.0.{i}").iterdir()).unlink()
    assert phase(tmp_path, "remove", **dirs)["ops"] == 5
    with pytest.raises(ValueError, match="2 items"):
        phase(tmp_path, "rename", kind="dir", prefix="mdr", items=1)
    with pytest.raises(ValueError, match="directory phase only"):
        phase(tmp_path, "rename", prefix="mdr", items=3)
    with pytest.raises(FileNotFoundError, match=r"dir\.mdtest\.0\.0"):
        phase(tmp_path, "rename", **dirs)


def test_stonewall_and_wear_out_in_a_tree(tmp_path: Path) -> None:
    """Items are numbered across the tree, so a stonewalled create and its
    wear-out go on filling the tree's directories in order."""
    dirs, per_dir = 1 + 4096, 10
    shape: dict[str, Any] = dict(prefix="sw", tree_depth=1, branch_factor=4096)
    phase(tmp_path, "create", kind="tree", items=dirs, **shape)
    many: dict[str, Any] = dict(items=dirs * per_dir, items_per_dir=per_dir, **shape)
    first = phase(tmp_path, "create", stonewall_s=0.05, **many)
    reached = first["items_reached"]
    assert first["stonewalled"] and 0 < reached < dirs * per_dir
    target = reached + per_dir  # the wear-out goes on into the next directory
    rest = phase(tmp_path, "create", **{**many, "items": target, "first_item": reached})
    assert rest["items_reached"] == target
    last = target - 1
    d = last // per_dir
    where = tmp_path / "sw" / "tree.0" / (f"tree.0.{d}" if d else "")
    assert f"file.mdtest.0.{last}" in {p.name for p in where.iterdir()}
    files = [f for _, _, names in os.walk(tmp_path / "sw") for f in names]
    assert len(files) == target
    assert phase(tmp_path, "remove", **{**many, "items": target})["ops"] == target
    assert phase(tmp_path, "remove", kind="tree", items=dirs, **shape)["ops"] == dirs
    assert list((tmp_path / "sw").iterdir()) == []
