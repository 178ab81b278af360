"""An mdtest run as metadata phase rows (``analysis.phases.MetadataPhase``).

- Rates and times come from mdtest's SUMMARY blocks as printed.
- A phase that did not run is left out: one that the options exclude
  (``-C``/``-T``/``-E``/``-r`` select phases) or whose rates are all zero.
- ``items`` is what mdtest announces (``N tasks, M files``); when ``-W``
  stopped the create phase, every rank went on to the furthest rank's count
  (mdtest's wear-out), so a repetition did that maximum times the tasks.
- Per-op latency comes from ``--savePerOpDataCSV`` files: mdtest rewrites
  them each repetition, so they hold the last repetition of the last test.
- Several tests in one run (``-f``/``-l``/``-s``) name their phases with the
  task count: ``File creation (4 tasks)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from analysis.loaders.mdtest import MdtestReport, MdtestTest
from analysis.loaders.mdtest_csv import PerOpTimes, RankDetails
from analysis.phases import (
    MDTEST_PHASES,
    SHARED_DIR,
    UNIQUE_DIR,
    LatencyFigures,
    MetadataPhase,
    latency_figures,
)

# mdtest's phase-selection flags and the operations they select.
_SELECTS = {"C": "create", "T": "stat", "E": "read", "r": "remove"}


def mdtest_phases(report: MdtestReport, per_op: Iterable[PerOpTimes] = ()) -> list[MetadataPhase]:
    """The metadata phases of an mdtest run, with per-op latency where files are given."""
    arguments = report.arguments
    latency = per_op_latency(per_op)
    rows: list[MetadataPhase] = []
    for index, test in enumerate(report.tests):
        last = index == len(report.tests) - 1
        for name in _phase_names(test):
            rate, time = _row(test.rates, name), _row(test.times, name)
            if name not in MDTEST_PHASES or not _ran(name, rate, time, arguments):
                continue
            phase = name if len(report.tests) == 1 else f"{name} ({test.tasks} tasks)"
            rows.append(
                _phase(report, test, name, rate, time, latency.get(name) if last else None, phase)
            )
    return rows


def rank_detail_phases(details: RankDetails, tool_version: str = "") -> list[MetadataPhase]:
    """Phases from a rank-details file alone: its ``all`` row (the first repetition)."""
    repetitions = int(details.ranks["repetition"].max()) + 1 if not details.ranks.empty else None
    tasks = int(details.ranks["rank"].max()) + 1 if not details.ranks.empty else None
    rows = []
    for record in details.overall.to_dict("records"):
        name = str(record["phase"])
        if name == "Directory read" or float(record["rate_ops_s"]) == 0:
            continue  # mdtest's summary never shows the directory read phase
        rate = float(record["rate_ops_s"])
        rows.append(
            MetadataPhase(
                phase=name,
                tool="mdtest",
                tool_version=tool_version,
                tasks=tasks,
                repetitions=1 if repetitions else None,
                items=_product(details.items_per_rank, tasks) if name in _ITEM_PHASES else None,
                items_per_rank=details.items_per_rank,
                rate_max_ops_s=rate,
                rate_min_ops_s=rate,
                rate_mean_ops_s=rate,
                rate_stddev_ops_s=0.0,
                time_max_s=float(record["time_s"]),
                time_min_s=float(record["time_s"]),
                time_mean_s=float(record["time_s"]),
                time_stddev_s=0.0,
                source=details.source,
            )
        )
    return rows


def per_op_latency(per_op: Iterable[PerOpTimes]) -> dict[str, LatencyFigures]:
    """Latency figures per phase over all ranks' per-op files."""
    runtimes: dict[str, list[float]] = {}
    for times in per_op:
        runtimes.setdefault(times.phase, []).extend(
            float(value) * 1e6 for value in times.times["runtime_s"]
        )
    figures = {phase: latency_figures(values) for phase, values in runtimes.items()}
    return {phase: value for phase, value in figures.items() if value is not None}


def rank_rows(details: RankDetails) -> pd.DataFrame:
    """Per-rank rows as the results directory keeps them (one per rank, repetition, phase)."""
    return details.ranks.assign(tool="mdtest", source=details.source)


_ITEM_PHASES = frozenset(name for name, (kind, _) in MDTEST_PHASES.items() if kind != "tree")


def _phase(
    report: MdtestReport,
    test: MdtestTest,
    name: str,
    rate: Mapping[str, Any] | None,
    time: Mapping[str, Any] | None,
    latency: LatencyFigures | None,
    phase: str,
) -> MetadataPhase:
    arguments = report.arguments
    kind = MDTEST_PHASES[name][0]
    stonewall_s = _float(arguments.get("W"))
    hits = test.stonewall if kind == "file" else ()
    creation = name == "File creation" and bool(hits)
    return MetadataPhase(
        phase=phase,
        tool="mdtest",
        tool_version=report.version,
        tasks=test.tasks or None,
        repetitions=test.iterations,
        items=_items(test, kind, hits),
        items_per_rank=_int(arguments.get("n")),
        rate_max_ops_s=_stat(rate, "max"),
        rate_min_ops_s=_stat(rate, "min"),
        rate_mean_ops_s=_stat(rate, "mean"),
        rate_stddev_ops_s=_stat(rate, "stddev"),
        time_max_s=_stat(time, "max"),
        time_min_s=_stat(time, "min"),
        time_mean_s=_stat(time, "mean"),
        time_stddev_s=_stat(time, "stddev"),
        rank_rate_max_ops_s=_stat(rate, "rank_max"),
        rank_rate_min_ops_s=_stat(rate, "rank_min"),
        rank_rate_mean_ops_s=_stat(rate, "rank_mean"),
        queue_depth=1,
        access=UNIQUE_DIR if "u" in arguments else SHARED_DIR,
        write_bytes=_int(arguments.get("w")) or 0,
        read_bytes=_int(arguments.get("e")) or 0,
        stonewall_s=stonewall_s if stonewall_s else None,
        stonewalled=creation,
        stonewall_items_min=min(hit[0] for hit in hits) if creation else None,
        stonewall_items_max=max(hit[1] for hit in hits) if creation else None,
        latency=latency,
        source=report.source,
    )


def _phase_names(test: MdtestTest) -> list[str]:
    names: list[str] = []
    for table in (test.rates, test.times):
        if table is not None:
            names += [str(name) for name in table["phase"] if name not in names]
    return names


def _row(table: pd.DataFrame | None, name: str) -> dict[str, Any] | None:
    if table is None:
        return None
    rows = table[table["phase"] == name]
    return {str(k): v for k, v in rows.iloc[0].items()} if not rows.empty else None


def _ran(
    name: str,
    rate: Mapping[str, Any] | None,
    time: Mapping[str, Any] | None,
    arguments: Mapping[str, Any],
) -> bool:
    kind, operation = MDTEST_PHASES[name]
    selected = {operation for flag, operation in _SELECTS.items() if flag in arguments}
    if selected:
        if kind == "tree":
            # the tree is made when creating and removed when removing
            needed = "create" if operation == "create" else "remove"
            if needed not in selected:
                return False
        elif operation not in selected:
            return False
    if rate is not None:
        return any(float(rate[key]) != 0 for key in ("max", "min", "mean"))
    return time is not None


def _items(test: MdtestTest, kind: str, hits: tuple[tuple[int, int, float], ...]) -> float | None:
    if kind == "tree" or test.items is None or test.item_kind == "1 file":
        return None
    if not hits:
        return float(test.items)
    # iterations that hit the stonewall did the furthest rank's count on every rank
    done = sum(hit[1] * test.tasks for hit in hits)
    rest = max(test.iterations - len(hits), 0) * test.items
    return (done + rest) / max(test.iterations, len(hits))


def _stat(row: Mapping[str, Any] | None, key: str) -> float | None:
    if row is None or key not in row:
        return None
    value = float(row[key])
    return None if math.isnan(value) else value


def _int(value: Any) -> int | None:
    try:
        return int(str(value)) if value is not None else None
    except ValueError:
        return None


def _float(value: Any) -> float | None:
    try:
        return float(str(value)) if value is not None else None
    except ValueError:
        return None


def _product(a: int | None, b: int | None) -> float | None:
    return float(a * b) if a is not None and b is not None else None
