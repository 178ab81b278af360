"""mdtest's tree (-z depth, -b branch factor) through the engine's metadata
phase against four real daemons, checked against the namespace: the tree's
creation makes every directory of the shape mdtest makes, the items go in
its directories by mdtest's rule, its removal takes every directory; and the
directory rename the engine refuses by design (EXDEV)."""

from __future__ import annotations

import errno
from typing import Any

import pytest
from conftest import Cluster

pytestmark = pytest.mark.timeout(120)

DEPTH, BRANCH = 2, 3
TREE_DIRS = 1 + 3 + 9
ITEMS_PER_DIR = 4


def walk(c: Any, directory: str) -> dict[str, list[str]]:
    """Every directory under ``directory`` (itself included) -> its entries."""
    entries = {directory: sorted(e["name"] for e in c.readdir(directory))}
    for entry in c.readdir(directory):
        if entry["kind"] == "dir":
            entries |= walk(c, f"{directory}/{entry['name']}")
    return entries


@pytest.mark.parametrize("unique_dir", [True, False], ids=["unique-dir", "shared-dir"])
def test_tree_shape_items_and_removal(cluster: Cluster, unique_dir: bool) -> None:
    prefix = f"mdtree-{cluster.transport}-{'u' if unique_dir else 's'}"
    shape = dict(prefix=prefix, tree_depth=DEPTH, branch_factor=BRANCH, unique_dir=unique_dir)
    root = f"{prefix}/tree.1" if unique_dir else f"{prefix}/tree.shared"
    base = root.rsplit("/", 1)[1]
    with cluster.client() as c:
        made = c.run_metadata_phase(phase="create", kind="tree", items=TREE_DIRS, rank=1,
                                    ranks=2, **shape)  # fmt: skip
        assert (made["kind"], made["ops"], made["dir"]) == ("tree", TREE_DIRS, root)
        tree = walk(c, root)
        # mdtest's numbering: the children of d are 3d+1..3d+3.
        assert tree[root] == [f"{base}.{d}" for d in (1, 2, 3)]
        assert tree[f"{root}/{base}.2"] == [f"{base}.{d}" for d in (7, 8, 9)]
        assert tree[f"{root}/{base}.2/{base}.8"] == []
        assert len(tree) == TREE_DIRS
        # Items: ITEMS_PER_DIR in each directory, item i in directory i // ITEMS_PER_DIR.
        items = dict(items=TREE_DIRS * ITEMS_PER_DIR, items_per_dir=ITEMS_PER_DIR, ranks=2,
                     rank=1, **shape)  # fmt: skip
        assert c.run_metadata_phase(phase="create", **items)["ops"] == TREE_DIRS * ITEMS_PER_DIR
        placed = walk(c, root)
        assert [n for n in placed[f"{root}/{base}.2/{base}.8"]] == [
            f"file.mdtest.1.{i}" for i in (32, 33, 34, 35)
        ]
        assert sum(n.startswith("file.") for names in placed.values() for n in names) == 52
        # A tree with items in it cannot go: its removal fails naming a directory.
        with pytest.raises(OSError, match=base):
            c.run_metadata_phase(phase="remove", kind="tree", items=TREE_DIRS, rank=1,
                                 ranks=2, **shape)  # fmt: skip
        c.run_metadata_phase(phase="remove", **items)
        gone = c.run_metadata_phase(phase="remove", kind="tree", items=TREE_DIRS, rank=1,
                                    ranks=2, **shape)  # fmt: skip
        assert gone["ops"] == TREE_DIRS
        with pytest.raises(FileNotFoundError):
            c.readdir(root)
        assert c.readdir(prefix) == []


def test_depth_zero_tree_is_the_rank_directory(cluster: Cluster) -> None:
    prefix = f"mdtree0-{cluster.transport}"
    with cluster.client() as c:
        made = c.run_metadata_phase(phase="create", kind="tree", items=1, prefix=prefix, rank=3,
                                    ranks=4)  # fmt: skip
        assert made["ops"] == 1 and [e["name"] for e in c.readdir(prefix)] == ["tree.3"]
        assert c.readdir(f"{prefix}/tree.3") == []
        c.run_metadata_phase(phase="remove", kind="tree", items=1, prefix=prefix, rank=3, ranks=4)
        assert c.readdir(prefix) == []


def test_bad_tree_arguments_and_refused_rename(cluster: Cluster) -> None:
    prefix = f"mdtreebad-{cluster.transport}"
    with cluster.client() as c:
        with pytest.raises(ValueError, match="items"):
            c.run_metadata_phase(phase="create", kind="tree", items=14, prefix=prefix,
                                 tree_depth=DEPTH, branch_factor=BRANCH)  # fmt: skip
        with pytest.raises(ValueError, match="branch_factor"):
            c.run_metadata_phase(phase="create", kind="tree", items=1, prefix=prefix,
                                 branch_factor=0)  # fmt: skip
        with pytest.raises(ValueError, match="items_per_dir"):
            c.run_metadata_phase(phase="create", items=4, prefix=prefix, tree_depth=1)
        with pytest.raises(ValueError, match="create and remove"):
            c.run_metadata_phase(phase="stat", kind="tree", items=1, prefix=prefix)
        # The engine renames no directory (docs/NAMESPACE.md): the phase says EXDEV.
        dirs: dict[str, Any] = dict(kind="dir", items=3, prefix=prefix)
        c.run_metadata_phase(phase="create", **dirs)
        with pytest.raises(OSError) as refused:
            c.run_metadata_phase(phase="rename", **dirs)
        assert refused.value.errno == errno.EXDEV
        assert c.run_metadata_phase(phase="remove", **dirs)["ops"] == 3
