"""What an IOR run printed, whatever its output format (JSON, text or CSV).

IOR writes its warnings and stonewall lines to the same stream as its
results, as whole lines between them; ``split_notes`` takes those lines out
and keeps what they say.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

_STONEWALL = re.compile(
    r"^stonewalling pairs accessed min: (\d+) max: (\d+) -- min data: ([\d.]+) GiB "
    r"mean data: ([\d.]+) GiB time: ([\d.]+)s"
)
_PAIRS = re.compile(r"^Pairs deadlineForStonewallingaccessed: (\d+)")
# A line of IOR's own output that is neither JSON nor a result row: it starts
# with a letter (JSON lines start with a brace, bracket, quote or comma), or
# with Open MPI's "[host:pid]" tag.
NOTE_LINE = re.compile(r"^[ \t]*(?:[A-Za-z]|\[[A-Za-z])[^\n]*$", re.MULTILINE)


@dataclass(frozen=True)
class StonewallHit:
    """One 'stonewalling pairs accessed' line: a phase stopped by IOR's deadline (-D)."""

    pairs_min: int  # transfers of the rank that did fewest when the deadline hit
    pairs_max: int
    min_data_gib: float
    mean_data_gib: float
    time_s: float


@dataclass(frozen=True)
class IorNotes:
    """The non-result lines of an IOR output."""

    warnings: tuple[str, ...] = ()
    stonewall: tuple[StonewallHit, ...] = ()
    pairs_accessed: int | None = None  # after wear-out (-O stoneWallingWearOut=1)


@dataclass(frozen=True)
class IorReport:
    """One IOR run: its header fields, per-operation summary and per-repetition results."""

    source: str
    version: str
    command_line: str
    began: str
    finished: str
    summary: pd.DataFrame
    results: pd.DataFrame
    parameters: list[dict[str, Any]] = field(default_factory=list)
    options: list[dict[str, str]] = field(default_factory=list)
    format: str = "json"  # json, text or csv
    notes: IorNotes = IorNotes()
    max_mib: dict[str, float] = field(default_factory=dict)  # "Max Write/Read" (text, -v)

    def operation(self, name: str) -> dict[str, Any]:
        """The summary row of one operation (``write`` or ``read``)."""
        rows = self.summary[self.summary["operation"] == name]
        if rows.empty:
            raise KeyError(f"{self.source}: IOR summary has no '{name}' operation")
        return {str(key): value for key, value in rows.iloc[0].items()}


def split_notes(lines: Iterable[str], keep: re.Pattern[str] | None = None) -> IorNotes:
    """Collect warnings and stonewall figures from IOR's note lines."""
    warnings: list[str] = []
    hits: list[StonewallHit] = []
    pairs: int | None = None
    for raw in lines:
        line = raw.strip()
        if not line or (keep is not None and keep.match(line)):
            continue
        if match := _STONEWALL.match(line):
            hits.append(
                StonewallHit(
                    pairs_min=int(match[1]),
                    pairs_max=int(match[2]),
                    min_data_gib=float(match[3]),
                    mean_data_gib=float(match[4]),
                    time_s=float(match[5]),
                )
            )
        elif match := _PAIRS.match(line):
            pairs = int(match[1])
        else:
            warnings.append(line)
    return IorNotes(tuple(warnings), tuple(hits), pairs)


def summary_from_results(results: pd.DataFrame) -> pd.DataFrame:
    """IOR's per-operation summary recomputed from per-repetition rows, IOR's way.

    Bandwidth per repetition is ``bwMiB``; operations per second are
    bandwidth over the transfer size (IOR's summary divides the bytes by
    the transfer size and the total time, not the per-repetition IOPS
    column, which excludes open and close); the standard deviation is the
    population one; ``MeanTime`` is the mean total time.
    """
    rows = []
    rates = results[results["access"].isin(["write", "read"])]
    for operation, group in rates.groupby("access", sort=False):
        bw = group["bwMiB"].astype(float)
        ops = bw * 1024.0 / group["xferKiB"].astype(float)
        row: dict[str, Any] = {
            "operation": operation,
            "blockSize": round(float(group["blockKiB"].iloc[0]) * 1024),
            "transferSize": round(float(group["xferKiB"].iloc[0]) * 1024),
        }
        if "numTasks" in group.columns:
            row["numTasks"] = int(group["numTasks"].iloc[0])
        row.update(
            {
                "repetitions": len(group),
                "bwMaxMIB": float(bw.max()),
                "bwMinMIB": float(bw.min()),
                "bwMeanMIB": float(bw.mean()),
                "bwStdMIB": float(bw.std(ddof=0)),
                "OPsMax": float(ops.max()),
                "OPsMin": float(ops.min()),
                "OPsMean": float(ops.mean()),
                "OPsSD": float(ops.std(ddof=0)),
                "MeanTime": float(group["totalTime"].astype(float).mean()),
            }
        )
        rows.append(row)
    return pd.DataFrame(rows)
