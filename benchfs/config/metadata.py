"""The ``[metadata]`` section: the mdtest-style metadata workload.

mdtest's file phases (``-F``), its directory phases (``-D``) or both, the
directory phases first as mdtest runs them, in a tree of directories per
rank (``-z``, ``-b``) made before them and removed after them.
docs/CONFIG.md describes every key.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from benchfs.config.sizes import parse_size

MetadataMode = Literal["off", "with-data", "only"]
MetadataPhaseName = Literal["create", "stat", "read", "rename", "remove"]
# files: mdtest -F; dirs: mdtest -D; both: neither flag.
MetadataKind = Literal["files", "dirs", "both"]
# The order mdtest runs its phases in (rename: directories only, mdtest -U).
PHASE_ORDER: tuple[MetadataPhaseName, ...] = ("create", "stat", "read", "rename", "remove")
# The phases run unless told: mdtest's -C -T -E -r (no rename, as without -U).
DEFAULT_PHASES: tuple[MetadataPhaseName, ...] = ("create", "stat", "read", "remove")
# The most directories a tree may have (the engine holds their order in memory).
MAX_TREE_DIRS = 1 << 24
ByteCount = Annotated[int, BeforeValidator(parse_size), Field(ge=0, le=1 << 30)]


class MetadataConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    # off: no metadata phases; with-data: after the data workload; only: instead of it.
    mode: MetadataMode = "off"
    kind: MetadataKind = "files"
    items: Annotated[int, Field(ge=1, le=1 << 32)] = 1000  # files/dirs per rank (mdtest -n)
    phases: list[MetadataPhaseName] = list(DEFAULT_PHASES)
    unique_dir: bool = True  # a directory per rank (mdtest -u), else one for all ranks
    write_bytes: ByteCount = 0  # written to each file after creating it (mdtest -w)
    read_bytes: ByteCount = 0  # read from each file in the read phase (mdtest -e)
    stonewall_s: Annotated[float, Field(ge=0)] = 0.0  # creation phases only (mdtest -W)
    repetitions: Annotated[int, Field(ge=1)] = 1  # (mdtest -i)
    prefix: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=64)] = "mdtest"
    # Levels of directories below each rank's directory (mdtest -z); deep
    # trees are long paths, so at most 64 levels.
    tree_depth: Annotated[int, Field(ge=0, le=64)] = 0
    branch_factor: Annotated[int, Field(ge=1, le=1 << 16)] = 1  # subdirectories each (mdtest -b)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if not self.phases or len(set(self.phases)) != len(self.phases):
            raise ValueError(f"phases must be distinct and not empty, got {self.phases}")
        if self.phases != sorted(self.phases, key=PHASE_ORDER.index):
            raise ValueError(
                f"phases must keep mdtest's order {', '.join(PHASE_ORDER)}, got {self.phases}"
            )
        if self.phases[0] != "create":
            raise ValueError("phases must start with 'create': the items must exist first")
        if "rename" in self.phases and self.kind == "files":
            raise ValueError(
                "phases has 'rename', which mdtest runs on directories only: "
                'set metadata.kind = "dirs" or "both"'
            )
        dirs = sum(self.branch_factor**level for level in range(self.tree_depth + 1))
        if dirs > MAX_TREE_DIRS:
            raise ValueError(
                f"metadata.tree_depth = {self.tree_depth} with metadata.branch_factor = "
                f"{self.branch_factor} makes {dirs} directories per tree, more than {MAX_TREE_DIRS}"
            )
        if dirs > self.items:
            raise ValueError(
                f"metadata.tree_depth = {self.tree_depth} with metadata.branch_factor = "
                f"{self.branch_factor} makes {dirs} directories per tree, more than "
                f"metadata.items = {self.items}: every directory needs an item (mdtest -n)"
            )
        if self.read_bytes > self.write_bytes and "read" in self.phases and self.kind != "dirs":
            raise ValueError(
                f"read_bytes ({self.read_bytes}) must be at most write_bytes "
                f"({self.write_bytes}): a file holds only what was written to it"
            )
        return self
