"""Parse mdtest's CSV files: per-rank details and per-operation timings.

``--saveRankPerformanceDetails=FILE``: a header ``rank,items,rate-<phase>,
time-<phase>,...`` for all eleven phases, an ``all`` row (the first
repetition over all ranks, with ``items`` per rank and the tree phases),
then one row per rank and repetition (ranks counting up from 0 each
repetition) without the items and tree columns: the rows are ragged, and a
phase that did not run has empty fields.

``--savePerOpDataCSV=PREFIX``: one file per file phase and rank named
``PREFIX-<phase>-<rank:05d>.csv`` (phase names hold spaces: ``File
creation``), each ``time,runtime,tp``: when the op started (s from the
phase start), how long it took (s), and bytes per second. A repetition
overwrites the previous one's files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis.errors import DataFormatError
from analysis.loaders._tooltext import read_tool_output
from analysis.loaders.detect import MDTEST_PER_OP_HEADER, MDTEST_RANK_DETAILS_HEADER, looks_like
from analysis.phases import MDTEST_PHASES

PER_OP_NAME = re.compile(
    r"^(?P<prefix>.*)-(?P<phase>"
    + "|".join(map(re.escape, MDTEST_PHASES))
    + r")-(?P<rank>\d+)\.csv$"
)


@dataclass(frozen=True)
class RankDetails:
    """An mdtest rank-details file."""

    source: str
    items_per_rank: int | None
    overall: pd.DataFrame  # the "all" row: phase, rate_ops_s, time_s (phases that ran)
    ranks: pd.DataFrame  # repetition, rank, phase, rate_ops_s, time_s


@dataclass(frozen=True)
class PerOpTimes:
    """One per-op file: the ops of one rank in one file phase."""

    source: str
    prefix: str
    phase: str
    rank: int
    times: pd.DataFrame  # time_s, runtime_s, bytes_per_s


def load_rank_details(path: Path) -> RankDetails:
    return parse_rank_details(read_tool_output(path), str(path))


def parse_rank_details(text: str, source: str) -> RankDetails:
    lines = text.splitlines()
    if not lines[0].startswith(MDTEST_RANK_DETAILS_HEADER):
        raise DataFormatError(
            source,
            "line 1",
            f"not an mdtest rank-details CSV (no '{MDTEST_RANK_DETAILS_HEADER}' header): "
            + looks_like(text),
        )
    header = lines[0].split(",")
    phases = _header_phases(header, source)
    overall: list[dict[str, object]] = []
    ranks: list[dict[str, object]] = []
    items: int | None = None
    repetition, previous_rank = 0, -1
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split(",")
        if len(fields) > len(header) or len(fields) % 2:
            raise DataFormatError(
                source,
                f"line {number}",
                f"{len(fields)} fields: mdtest writes rank, items and pairs of rate and time, "
                f"at most {len(header)} (truncated line?)",
            )
        if fields[0] == "all":
            items = _int(fields[1], source, number, "items")
            overall += _pairs(fields, phases, source, number)
            continue
        rank = _int(fields[0], source, number, "rank")
        if rank <= previous_rank:
            repetition += 1
        previous_rank = rank
        for row in _pairs(fields, phases, source, number):
            ranks.append({"repetition": repetition, "rank": rank, **row})
    if not overall and not ranks:
        raise DataFormatError(source, "line 2", "mdtest rank-details CSV has no rows")
    return RankDetails(
        source=source,
        items_per_rank=items,
        overall=pd.DataFrame(overall, columns=["phase", "rate_ops_s", "time_s"]),
        ranks=pd.DataFrame(ranks, columns=["repetition", "rank", "phase", "rate_ops_s", "time_s"]),
    )


def per_op_name(name: str) -> re.Match[str] | None:
    """The prefix, phase and rank of a per-op file name, if it follows mdtest's pattern."""
    return PER_OP_NAME.match(name)


def load_per_op(path: Path) -> PerOpTimes:
    return parse_per_op(read_tool_output(path), path.name, str(path))


def parse_per_op(text: str, name: str, source: str) -> PerOpTimes:
    lines = text.splitlines()
    if lines[0].strip() != MDTEST_PER_OP_HEADER:
        raise DataFormatError(
            source,
            "line 1",
            f"not an mdtest per-op CSV (no '{MDTEST_PER_OP_HEADER}' header): {looks_like(text)}",
        )
    match = per_op_name(name)
    if match is None:
        raise DataFormatError(
            source,
            "file name",
            "an mdtest per-op CSV must keep mdtest's name PREFIX-<phase>-<rank>.csv "
            "(the phase is only in the name)",
        )
    rows: list[tuple[float, float, float]] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split(",")
        try:
            if len(fields) != 3:
                raise ValueError(line)
            rows.append((float(fields[0]), float(fields[1]), float(fields[2])))
        except ValueError as error:
            raise DataFormatError(
                source,
                f"line {number}",
                f"not a 'time,runtime,tp' row: {line!r} (truncated line?)",
            ) from error
    return PerOpTimes(
        source=source,
        prefix=match["prefix"],
        phase=match["phase"],
        rank=int(match["rank"]),
        times=pd.DataFrame(rows, columns=["time_s", "runtime_s", "bytes_per_s"]),
    )


def _header_phases(header: list[str], source: str) -> list[str]:
    phases = []
    for index in range(2, len(header), 2):
        rate = header[index]
        time = header[index + 1] if index + 1 < len(header) else ""
        name = rate.removeprefix("rate-")
        if not rate.startswith("rate-") or time != f"time-{name}":
            raise DataFormatError(
                source, "line 1", f"column {index + 1}: expected rate-<phase>,time-<phase>"
            )
        phases.append(name)
    return phases


def _pairs(
    fields: list[str], phases: list[str], source: str, number: int
) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for index, phase in enumerate(phases):
        position = 2 + 2 * index
        if position + 1 >= len(fields):
            break  # ragged: rank rows stop before the tree phases
        rate, time = fields[position], fields[position + 1]
        if not rate and not time:
            continue  # the phase did not run
        try:
            rows.append({"phase": phase, "rate_ops_s": float(rate), "time_s": float(time)})
        except ValueError as error:
            raise DataFormatError(
                source,
                f"line {number}",
                f"{phase}: not a rate and a time: {rate!r}, {time!r} (truncated line?)",
            ) from error
    return rows


def _int(text: str, source: str, number: int, what: str) -> int:
    try:
        return int(text)
    except ValueError as error:
        raise DataFormatError(
            source, f"line {number}", f"{what} is not a number: {text!r}"
        ) from error
