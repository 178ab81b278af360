"""What every rank is told about the metadata workload (part of the
workload spec, ``benchfs.workload.spec``), and mdtest's names of its phases."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

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
    "remove": "Directory removal",
}
# Every name a metadata phase of the workload may have.
METADATA_PHASE_NAMES = frozenset({*MDTEST_NAMES.values(), *MDTEST_DIR_NAMES.values()})
# metadata.kind -> the engine's item kinds, in the order mdtest runs them:
# directories, then files.
ITEM_KINDS: dict[str, tuple[str, ...]] = {
    "files": ("file",),
    "dirs": ("dir",),
    "both": ("dir", "file"),
}


def mdtest_name(item_kind: str, phase: str) -> str:
    """mdtest's name of the engine's ``phase`` on items of ``item_kind``
    (``file`` or ``dir``)."""
    return (MDTEST_DIR_NAMES if item_kind == "dir" else MDTEST_NAMES)[phase]


@dataclass(frozen=True)
class MetadataWorkload:
    """What every rank is told about the metadata workload (part of the spec)."""

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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MetadataWorkload:
        return cls(**data)

    def item_kinds(self) -> tuple[str, ...]:
        """The engine's item kinds of the workload, in the order they run."""
        return ITEM_KINDS[self.kind]

    def phases_of(self, item_kind: str) -> list[str]:
        """The phases run on items of ``item_kind``: a directory has no read."""
        return [p for p in self.phases if item_kind == "file" or p in MDTEST_DIR_NAMES]

    def phase_names(self) -> list[str]:
        """mdtest's names of every phase of a repetition, in the order they run."""
        return [mdtest_name(k, p) for k in self.item_kinds() for p in self.phases_of(k)]

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
        }
