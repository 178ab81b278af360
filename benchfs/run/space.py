"""A stonewalled phase's block size is a ceiling, not a size to fill.

The main job ends each phase on time (``workload.stonewall_s``) with a
block size no rank should reach (8 GiB); on a node whose disk has less
room than that, the ceiling is lowered to what fits instead of the run
failing with ENOSPC half way through the write phase. Checked where the
data lands on this machine (the local launcher); a fixed-size phase
(stonewall off) keeps the size the user asked for.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from benchfs.config.model import RunConfig
from benchfs.config.sizes import format_size
from benchfs.config.suite import IOR_HARD_TRANSFER, SuiteSizes
from benchfs.errors import ConfigError
from benchfs.launchers.base import Launcher
from benchfs.run.cluster import data_base

# Of the free space, what the write phase may use (files, chunk rounding,
# logs and traces beside them).
HEADROOM = 0.8
# What one of mdtest-hard's 3,901-byte files takes on a disk (a 4 KiB block).
FILE_BLOCK = 4096


def _existing(path: Path) -> Path:
    """``path`` or the nearest directory above it that exists."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def fit_block_to_space(
    config: RunConfig, ranks: int, launcher: Launcher
) -> tuple[RunConfig, str | None]:
    """The config with ``block_size`` lowered to fit the free space where
    the data goes, and a note saying so; unchanged (and None) otherwise."""
    workload = config.workload
    if workload.stonewall_s <= 0 or not launcher.capabilities.runs_here or ranks < 1:
        return config, None
    directory = Path(workload.posix_path) if workload.posix_path else data_base(config)
    free = shutil.disk_usage(_existing(directory)).free
    per_rank = int(free * HEADROOM) // ranks // workload.segments
    per_rank -= per_rank % workload.transfer_size
    if per_rank >= workload.block_size:
        return config, None
    if per_rank < workload.transfer_size:
        raise ConfigError(
            f"workload.block_size: {directory} has {format_size(free)} free, not room for "
            f"one {format_size(workload.transfer_size)} transfer per rank ({ranks} ranks)"
        )
    capped = config.model_copy(
        update={"workload": workload.model_copy(update={"block_size": per_rank})}
    )
    note = (
        f"workload.block_size lowered from {format_size(workload.block_size)} to "
        f"{format_size(per_rank)} per rank: {directory} has {format_size(free)} free for "
        f"{ranks} ranks (the {workload.stonewall_s:g} s stonewall still ends each phase)"
    )
    return capped, note


def suite_ceilings(sizes: SuiteSizes, free: int, ranks: int) -> tuple[int, int, int] | None:
    """ior-easy's block, ior-hard's segments and mdtest-hard's files per rank,
    all scaled by one factor so that what coexists until the reads (the two
    ior files, mdtest-hard's files at a 4 KiB block each) fits ``HEADROOM`` of
    ``free``; None when the suite's own fit."""
    per_rank = int(free * HEADROOM) // ranks
    easy = sizes.ior_easy_block_size
    hard = sizes.ior_hard_segments * IOR_HARD_TRANSFER
    files = sizes.mdtest_hard_files * FILE_BLOCK
    if easy + hard + files <= per_rank:
        return None
    factor = per_rank / (easy + hard + files)
    block = int(easy * factor)
    block -= block % sizes.ior_easy_transfer_size
    return block, int(sizes.ior_hard_segments * factor), int(sizes.mdtest_hard_files * factor)


def fit_suite_to_space(
    config: RunConfig, ranks: int, launcher: Launcher
) -> tuple[RunConfig, str | None]:
    """A suite's ior ceilings lowered to the free space where the data goes
    (as ``fit_block_to_space`` does for the main job), and a note saying so."""
    sizes = config.suite.sizes()
    if sizes.stonewall_s <= 0 or not launcher.capabilities.runs_here or ranks < 1:
        return config, None
    posix = config.workload.posix_path
    directory = Path(posix) if posix else data_base(config)
    free = shutil.disk_usage(_existing(directory)).free
    lowered = suite_ceilings(sizes, free, ranks)
    if lowered is None:
        return config, None
    block, segments, files = lowered
    if block < sizes.ior_easy_transfer_size or segments < 1 or files < 1:
        raise ConfigError(
            f"suite.ior_easy_block_size: {directory} has {format_size(free)} free, not room "
            f"for the suite's files ({ranks} ranks)"
        )
    suite = config.suite.model_copy(
        update={"ior_easy_block_size": block, "ior_hard_segments": segments,
                "mdtest_hard_files": files}
    )  # fmt: skip
    note = (
        f"suite.ior_easy_block_size lowered to {format_size(block)}, suite.ior_hard_segments "
        f"to {segments} and suite.mdtest_hard_files to {files} per rank: {directory} has "
        f"{format_size(free)} free for {ranks} ranks (the {sizes.stonewall_s:g} s stonewall "
        "still ends each write phase)"
    )
    return config.model_copy(update={"suite": suite}), note
