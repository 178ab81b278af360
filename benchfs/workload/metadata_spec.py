"""What every rank is told about the metadata workload (part of the
workload spec, ``benchfs.workload.spec``), and mdtest's names of its phases."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

# The engine's phase -> mdtest's name of it.
MDTEST_NAMES: dict[str, str] = {
    "create": "File creation",
    "stat": "File stat",
    "read": "File read",
    "remove": "File removal",
}


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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MetadataWorkload:
        return cls(**data)

    def arguments(self, phase: str, rank: int, ranks: int) -> dict[str, Any]:
        """Keyword arguments of ``Client.run_metadata_phase`` for one phase."""
        return {
            "phase": phase,
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
