"""What every rank is told about the metadata workload (part of the
workload spec, ``benchfs.workload.spec``), and mdtest's names of its phases."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

# The engine's phase -> mdtest's name of it, for files and for directories
# (mdtest's "Directory read" does nothing, so directories have no read phase).
MDTEST_NAMES: dict[str, str] = {
    "create": "File creation",
    "stat": "File stat",
    "read": "File read",
    "remove": "File removal",
}
MDTEST_DIR_NAMES: dict[str, str] = {
    "create": "Directory creation",
    "stat": "Directory stat",
    "rename": "Directory rename",
    "remove": "Directory removal",
}
# The tree the items live in (mdtest -z, -b): made before the item phases,
# removed after them.
MDTEST_TREE_NAMES: dict[str, str] = {
    "create": "Tree creation",
    "remove": "Tree removal",
}
TREE_PHASE_NAMES = frozenset(MDTEST_TREE_NAMES.values())
# Every name a metadata phase of the workload may have.
METADATA_PHASE_NAMES = frozenset(
    {*MDTEST_NAMES.values(), *MDTEST_DIR_NAMES.values(), *TREE_PHASE_NAMES}
)
# What the summary says of a directory rename the target refuses.
RENAME_UNSUPPORTED = (
    "not supported by the target: BenchFS refuses to rename a directory (EXDEV, docs/NAMESPACE.md)"
)
# metadata.kind -> the engine's item kinds, in the order mdtest runs them:
# directories, then files.
ITEM_KINDS: dict[str, tuple[str, ...]] = {
    "files": ("file",),
    "dirs": ("dir",),
    "both": ("dir", "file"),
}


def mdtest_name(item_kind: str, phase: str) -> str:
    """mdtest's name of the engine's ``phase`` on items of ``item_kind``
    (``file``, ``dir`` or ``tree``)."""
    names = {"dir": MDTEST_DIR_NAMES, "tree": MDTEST_TREE_NAMES}.get(item_kind, MDTEST_NAMES)
    return names[phase]


def tree_dirs(depth: int, branch_factor: int) -> int:
    """Directories of one tree, mdtest's ``sum(b^i, i = 0..depth)``."""
    return sum(branch_factor**level for level in range(depth + 1))


class MetadataWorkload(BaseModel):
    """What every rank is told about the metadata workload (part of the spec, as
    ``model_dump()``)."""

    model_config = ConfigDict(frozen=True)

    items: int
    phases: list[str]
    unique_dir: bool
    write_bytes: int
    read_bytes: int
    stonewall_s: float
    repetitions: int
    prefix: str
    # mdtest -X: the read phase checks each file's bytes against what its create wrote.
    verify: bool = False
    # The files' data pattern (the same for create and read).
    seed: int = 0
    # mdtest -Y: the create phase ends with the target's sync, inside its time.
    sync_after_create: bool = False
    kind: str = "files"  # files, dirs or both (metadata.kind)
    # mdtest -N: stat, read and remove act on the items of the rank this many
    # ranks further (0: each rank its own), so no client cache answers them.
    neighbour_stride: int = 0
    # mdtest -z and -b: the tree below each rank's directory (0: the directory alone).
    tree_depth: int = 0
    branch_factor: int = 1
    # Whether the target renames directories ("Directory rename" runs); the
    # engine refuses to (docs/NAMESPACE.md), so on BenchFS it is reported
    # as not supported.
    dir_rename: bool = True

    def item_kinds(self) -> tuple[str, ...]:
        """The engine's item kinds of the workload, in the order they run."""
        return ITEM_KINDS[self.kind]

    def phases_of(self, item_kind: str) -> list[str]:
        """The phases named for items of ``item_kind``: a directory has no
        read, a file no rename (mdtest renames directories only, and not
        one alone)."""
        if item_kind == "file":
            return [p for p in self.phases if p != "rename"]
        return [
            p for p in self.phases if p in MDTEST_DIR_NAMES and (p != "rename" or self.items > 1)
        ]

    def tree_phases(self) -> list[str]:
        """The tree's phases: created before the items (every repetition
        starts with a create), removed after them when ``remove`` is timed."""
        return [p for p in self.phases if p in MDTEST_TREE_NAMES]

    def phase_names(self) -> list[str]:
        """mdtest's names of every phase of a repetition, in the order they run."""
        items = [mdtest_name(k, p) for k in self.item_kinds() for p in self.phases_of(k)]
        tree = [mdtest_name("tree", p) for p in self.tree_phases()]
        return tree[:1] + items + tree[1:]

    def tree_dirs(self) -> int:
        """Directories of one rank's tree (of the one shared tree)."""
        return tree_dirs(self.tree_depth, self.branch_factor)

    def items_per_dir(self) -> int:
        """Items in each directory of the tree (mdtest: ``-n`` over the tree's
        directories); 0 without a tree: all in the rank's directory."""
        return self.items // self.tree_dirs() if self.tree_depth > 0 else 0

    def tree_arguments(self, phase: str, rank: int, ranks: int) -> dict[str, Any]:
        """``run_metadata_phase``'s arguments for the tree: every rank its own
        tree, or rank 0 alone the shared one (mdtest)."""
        makes_tree = self.unique_dir or rank == 0
        return {
            **self.arguments(phase, rank, ranks, "tree"),
            "rank": rank,
            "items": self.tree_dirs() if makes_tree else 0,
            "write_bytes": 0,
            "read_bytes": 0,
        }

    def arguments(
        self, phase: str, rank: int, ranks: int, item_kind: str = "file"
    ) -> dict[str, Any]:
        """Keyword arguments of ``Client.run_metadata_phase`` for one phase:
        after the create, on the items of the rank ``neighbour_stride`` further."""
        if phase != "create":
            rank = (rank + self.neighbour_stride) % ranks
        return {
            "phase": phase,
            "kind": item_kind,
            "prefix": self.prefix,
            "items": self.items,
            "rank": rank,
            "ranks": ranks,
            "unique_dir": self.unique_dir,
            "write_bytes": self.write_bytes,
            "read_bytes": self.read_bytes,
            "verify": self.verify and phase == "read",
            "seed": self.seed,
            "tree_depth": self.tree_depth,
            "branch_factor": self.branch_factor,
            "items_per_dir": self.items_per_dir(),
        }
