"""The metadata phases of ``workload/summary.json``, computed as mdtest does.

Pure functions over the per-rank rows of the metadata phases (mdtest's
names: "Directory creation", "File creation" ...) and their per-item
latencies.

- The rate of a repetition is mdtest's: the items of all ranks over the
  span from the first rank's start to the last rank's end (the barriers
  around a phase make that the slowest rank's time). A tree phase counts
  the directories of one tree, as mdtest does, even when every rank makes
  its own (``unique_dir``).
- A directory rename the target refuses (BenchFS) is a row without
  figures that says so (``unsupported``).
- Per phase, over the repetitions: max, min, mean and sample standard
  deviation of the rates and of the times (``analysis.phases.MetadataPhase``),
  the per-rank rates (mdtest ``--showRankStatistics``), what the stonewall
  did, and latency percentiles over every item of every repetition.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from analysis.phases import SHARED_DIR, UNIQUE_DIR, MetadataPhase
from analysis.phases import latency_figures as phase_latency
from benchfs import __version__
from benchfs.workload.metadata_spec import (
    MDTEST_DIR_NAMES,
    METADATA_PHASE_NAMES,
    RENAME_UNSUPPORTED,
    TREE_PHASE_NAMES,
    MetadataWorkload,
)
from benchfs.workload.summary import NS_PER_S, RankRow, latency_figures


def is_metadata_phase(phase: str) -> bool:
    return phase in METADATA_PHASE_NAMES


def _span_s(rows: Sequence[RankRow]) -> float:
    return (max(r.end_unix_ns for r in rows) - min(r.start_unix_ns for r in rows)) / NS_PER_S


def _items(rows: Sequence[RankRow]) -> int:
    """Items of a phase in one repetition: of every rank, or one tree's
    directories for a tree phase (mdtest's count)."""
    if rows[0].phase in TREE_PHASE_NAMES:
        return max(r.ops for r in rows)
    return sum(r.ops for r in rows)


def _sample_std(values: Sequence[float]) -> float | None:
    if not values:
        return None
    return statistics.stdev(values) if len(values) > 1 else 0.0


def repetition_row(
    rows: Sequence[RankRow], latency_ns: npt.NDArray[np.uint64] | None
) -> dict[str, Any]:
    """One phase of one repetition over all ranks."""
    span = _span_s(rows)
    items = _items(rows)
    return {
        "phase": rows[0].phase,
        "repetition": rows[0].repetition,
        "kind": "metadata",
        "rate_ops_s": items / span if span > 0 else None,
        "time_s": span,
        "items": items,
        "bytes": sum(r.bytes for r in rows),
        "ranks": len(rows),
        "stonewalled": any(r.stonewalled for r in rows),
        **latency_figures(latency_ns),
    }


def phase_row(
    phase: str,
    by_repetition: Sequence[Sequence[RankRow]],
    workload: MetadataWorkload,
    latency_ns: npt.NDArray[np.uint64] | None,
) -> dict[str, Any]:
    """mdtest's summary line of one phase over its repetitions."""
    times = [_span_s(rows) for rows in by_repetition]
    rates = [_items(rows) / t for rows, t in zip(by_repetition, times, strict=True) if t > 0]
    every = [row for rows in by_repetition for row in rows]
    tree = phase in TREE_PHASE_NAMES
    # A shared tree is rank 0's alone: the other ranks' empty calls are no rate.
    rank_rates = [r.ops / r.elapsed_s for r in every if r.elapsed_s > 0 and (r.ops or not tree)]
    hits = [r.stonewall_ops for r in every if r.stonewall_ops is not None]
    stonewalled = any(r.stonewalled for r in every)
    # A suite's phases ("mdtest-hard-write") are on files too.
    on_files = phase not in MDTEST_DIR_NAMES.values() and not tree
    latency = None
    if latency_ns is not None and latency_ns.size:
        latency = phase_latency((latency_ns.astype(np.float64) / 1000.0).tolist())
    return MetadataPhase(
        phase=phase,
        tool="benchfs",
        tool_version=__version__,
        tasks=max(len(rows) for rows in by_repetition),
        repetitions=len(by_repetition),
        items=statistics.fmean(_items(rows) for rows in by_repetition),
        items_per_rank=workload.tree_dirs() if tree else workload.items,
        rate_max_ops_s=max(rates, default=None),
        rate_min_ops_s=min(rates, default=None),
        rate_mean_ops_s=statistics.fmean(rates) if rates else None,
        rate_stddev_ops_s=_sample_std(rates),
        time_max_s=max(times),
        time_min_s=min(times),
        time_mean_s=statistics.fmean(times),
        time_stddev_s=_sample_std(times),
        rank_rate_max_ops_s=max(rank_rates, default=None),
        rank_rate_min_ops_s=min(rank_rates, default=None),
        rank_rate_mean_ops_s=statistics.fmean(rank_rates) if rank_rates else None,
        queue_depth=1,
        access=UNIQUE_DIR if workload.unique_dir else SHARED_DIR,
        # Bytes per file: a directory holds none.
        write_bytes=workload.write_bytes if on_files else None,
        read_bytes=workload.read_bytes if on_files else None,
        stonewall_s=workload.stonewall_s or None,
        stonewalled=stonewalled,
        stonewall_items_min=min(hits) if hits and stonewalled else None,
        stonewall_items_max=max(hits) if hits and stonewalled else None,
        latency=latency,
    ).to_row()


def unsupported_row(phase: str, workload: MetadataWorkload) -> dict[str, Any]:
    """The row of a phase the target cannot run: no figures, and why."""
    return MetadataPhase(
        phase=phase,
        tool="benchfs",
        tool_version=__version__,
        repetitions=workload.repetitions,
        items_per_rank=workload.items,
        access=UNIQUE_DIR if workload.unique_dir else SHARED_DIR,
        unsupported=RENAME_UNSUPPORTED,
    ).to_row()


def summarize_metadata(
    rows: Iterable[RankRow],
    workload: MetadataWorkload,
    latencies: Mapping[tuple[str, int], npt.NDArray[np.uint64]] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(phase rows, repetition rows) of the metadata phases, in the order they ran."""
    latencies = latencies or {}
    grouped: dict[tuple[str, int], list[RankRow]] = {}
    for row in rows:
        if is_metadata_phase(row.phase):
            grouped.setdefault((row.phase, row.repetition), []).append(row)
    phases: list[dict[str, Any]] = []
    repetitions: list[dict[str, Any]] = []
    for name in workload.phase_names():
        keys = sorted(key for key in grouped if key[0] == name)
        if name == MDTEST_DIR_NAMES["rename"] and not workload.dir_rename:
            phases.append(unsupported_row(name, workload))
            continue
        if not keys:
            continue
        repetitions += [repetition_row(grouped[key], latencies.get(key)) for key in keys]
        merged = [latencies[key] for key in keys if key in latencies]
        phases.append(
            phase_row(
                name,
                [grouped[key] for key in keys],
                workload,
                np.concatenate(merged) if merged else None,
            )
        )
    return phases, repetitions
