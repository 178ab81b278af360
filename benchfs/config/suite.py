"""The ``[suite]`` section: a whole benchmark suite instead of one workload.

``io500`` runs IO500's twelve scored phases with IO500's sizes and its 300 s
stonewall; ``io500-quick`` the same phases with small sizes and a 1 s
stonewall, for a laptop or CI. Every size can be set; unset keys take the
suite's value (``SuiteSizes``). docs/CONFIG.md describes every key.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from analysis.manifest import SuiteSizes as SuiteSizes
from benchfs.config.sizes import parse_size

SuiteName = Literal["none", "io500", "io500-quick"]
# builtin: BenchFS's own loops; ior: IOR and mdtest with IO500's arguments;
# io500: the reference's own io500 binary with an ini made from these settings.
SuiteTool = Literal["builtin", "ior", "io500"]
# The tools that run on a mounted file system as one MPI job, with a stonewall.
EXTERNAL_TOOLS = ("ior", "io500")
MAX_SIZE = 1 << 40  # the engine's largest block per rank
MAX_ITEMS = 1 << 32
# IO500's fixed shapes (its phase_ior_hard.c and phase_mdtest_hard.c).
IOR_HARD_TRANSFER = 47008
MDTEST_HARD_BYTES = 3901

_Size = Annotated[int, BeforeValidator(parse_size), Field(gt=0, le=MAX_SIZE)]
_Items = Annotated[int, Field(ge=1, le=MAX_ITEMS)]


# Per suite: stonewall_s, ior-easy transfer and block, ior-hard segments,
# mdtest-easy and mdtest-hard files per rank. io500: the reference's defaults
# (transferSize 2m, segmentCount 10000000, n 1000000; its blockSize 9920000m
# is above the engine's 1t per rank, so 1t), stonewall-time 300.
_DEFAULTS: dict[str, tuple[float, int, int, int, int, int]] = {
    "io500": (300.0, 2 << 20, 1 << 40, 10_000_000, 1_000_000, 1_000_000),
    # Small enough for a laptop's disk (at most 4 ranks x 222 MiB), large
    # enough that the 1 s stonewall, not the ceiling, ends most phases there.
    "io500-quick": (1.0, 1 << 20, 128 << 20, 2000, 5000, 2000),
}


class SuiteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    name: SuiteName = "none"
    tool: SuiteTool = "builtin"
    # Unset: the suite's own (io500 300 s, io500-quick 1 s).
    stonewall_s: Annotated[float, Field(ge=0, le=7 * 24 * 3600, allow_inf_nan=False)] | None = None
    ior_easy_transfer_size: _Size | None = None
    ior_easy_block_size: _Size | None = None
    ior_hard_segments: _Items | None = None
    mdtest_easy_files: _Items | None = None
    mdtest_hard_files: _Items | None = None
    # tool = "ior": the directory holding ior and mdtest (None: PATH, $IOR_BIN_DIR, /opt/ior/bin);
    # tool = "io500": the io500 binary or its directory (None: PATH, $IO500_BIN_DIR).
    tool_path: Annotated[str, Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.name == "none":
            given = [
                key
                for key in self.model_fields_set
                if key != "name" and getattr(self, key) != _FIELD_DEFAULTS[key]
            ]
            if given:
                raise ValueError(f"{given[0]} needs a suite: set suite.name (io500 or io500-quick)")
            return self
        if self.tool_path is not None and self.tool not in EXTERNAL_TOOLS:
            raise ValueError(
                'tool_path needs tool = "ior" (IOR and mdtest) or tool = "io500" (the io500 binary)'
            )
        sizes = self.sizes()
        if self.tool in EXTERNAL_TOOLS and sizes.stonewall_s <= 0:
            # IOR refuses its wear-out (stoneWallingWearOut) without a deadline (-D).
            raise ValueError(
                f'stonewall_s must be above 0 with tool = "{self.tool}": IOR and mdtest run the '
                "write phases with a stonewall and wear-out"
            )
        if sizes.ior_easy_block_size % sizes.ior_easy_transfer_size:
            raise ValueError(
                f"ior_easy_block_size ({sizes.ior_easy_block_size}) must be a multiple of "
                f"ior_easy_transfer_size ({sizes.ior_easy_transfer_size})"
            )
        return self

    def sizes(self) -> SuiteSizes:
        """The suite's sizes, the keys set here over the suite's own."""
        stonewall, transfer, block, segments, easy, hard = _DEFAULTS[self.name]
        return SuiteSizes(
            name=self.name,
            tool=self.tool,
            stonewall_s=stonewall if self.stonewall_s is None else self.stonewall_s,
            ior_easy_transfer_size=self.ior_easy_transfer_size or transfer,
            ior_easy_block_size=self.ior_easy_block_size or block,
            ior_hard_segments=self.ior_hard_segments or segments,
            mdtest_easy_files=self.mdtest_easy_files or easy,
            mdtest_hard_files=self.mdtest_hard_files or hard,
        )


_FIELD_DEFAULTS: dict[str, Any] = {
    key: field.default for key, field in SuiteConfig.model_fields.items()
}
