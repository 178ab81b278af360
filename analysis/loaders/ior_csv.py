"""Parse IOR's CSV output (``-O summaryFormat=CSV``).

IOR's CSV holds only the per-repetition rows (``access,bw(MiB/s),IOPS,...,
numTasks,iter``), one header per test, with warning and stonewall lines
between the rows; no version, command line or summary. The summary is
recomputed from the rows the way IOR computes it (``summary_from_results``),
so the figures match IOR's own summary up to the CSV's four decimals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from analysis.errors import DataFormatError
from analysis.loaders._tooltext import failure, read_tool_output
from analysis.loaders.detect import IOR_CSV_HEADER, IOR_CSV_LINE, looks_like
from analysis.loaders.ior_model import IorReport, split_notes, summary_from_results

_COLUMNS = ("access", "bwMiB", "iops", "latency", "blockKiB", "xferKiB", "openTime", "wrRdTime",
            "closeTime", "totalTime", "numTasks", "repetition")  # fmt: skip
_INTEGERS = frozenset({"numTasks", "repetition"})


def load_ior_csv(path: Path) -> IorReport:
    return parse_ior_csv(read_tool_output(path), str(path))


def parse_ior_csv(text: str, source: str) -> IorReport:
    """Per-repetition rows from IOR's CSV and the summary recomputed from them."""
    if IOR_CSV_LINE.search(text) is None:
        raise DataFormatError(
            source,
            "line 1",
            f"not IOR CSV output (no 'access,bw(MiB/s),...' header): {looks_like(text)}",
        )
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    test_id = -1
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith(IOR_CSV_HEADER):
            test_id += 1
            continue
        fields = stripped.split(",")
        if test_id >= 0 and fields[0] in ("write", "read") and len(fields) > 1:
            rows.append({"TestID": test_id, **_row(fields, source, number)})
        elif stripped:
            notes.append(stripped)
    if not rows:
        found = failure(text)
        if found is not None:
            raise DataFormatError(source, f"line {found[0]}", f"the IOR run failed: {found[1]}")
        raise DataFormatError(source, "line 2", "IOR CSV output has a header but no result rows")
    results = pd.DataFrame(rows)
    summaries = []
    for test, group in results.groupby("TestID", sort=True):
        summaries.append(summary_from_results(group).assign(TestID=test))
    return IorReport(
        source=source,
        version="",
        command_line="",
        began="",
        finished="",
        summary=pd.concat(summaries, ignore_index=True),
        results=results,
        format="csv",
        notes=split_notes(notes),
    )


def _row(fields: list[str], source: str, number: int) -> dict[str, Any]:
    if len(fields) != len(_COLUMNS):
        raise DataFormatError(
            source,
            f"line {number}",
            f"IOR CSV row has {len(fields)} fields where IOR writes {len(_COLUMNS)} "
            "(truncated line?)",
        )
    row: dict[str, Any] = {"access": fields[0]}
    for column, field in zip(_COLUMNS[1:], fields[1:], strict=True):
        try:
            row[column] = int(field) if column in _INTEGERS else float(field)
        except ValueError as error:
            raise DataFormatError(
                source, f"line {number}", f"IOR CSV column {column!r}: not a number: {field!r}"
            ) from error
    return row
