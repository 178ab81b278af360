"""Parse IOR's human-readable output (its default, no ``-O summaryFormat``).

What IOR prints: a header (``IOR-<version>: MPI Coordinated Test of Parallel
I/O``, ``Began``, ``Command line``), per test an ``Options:`` block and a
``Results:`` table with one row per operation and repetition (``remove``
rows with ``-v``), stonewall and warning lines between the rows, ``Max
Write``/``Max Read`` lines (``-v``), and at the end the ``Summary of all
tests:`` table, whose columns are mapped to the names IOR uses in its JSON
(``Max(MiB)`` -> ``bwMaxMIB``, ``Stonewall(s)`` -> ``StoneWallTime``, ...).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.errors import DataFormatError
from analysis.loaders._tooltext import describe_end, failure, read_tool_output
from analysis.loaders.detect import IOR_BANNER, looks_like
from analysis.loaders.ior_model import IorReport, split_notes

_KEY_VALUE = re.compile(r"^([A-Za-z][\w /().#-]*?)\s*: ?(.*?)\s*$")
_MAX = re.compile(r"^Max (Write|Read):\s+([\d.]+) MiB/sec")
_RESULT_HEADER = "access"
_SUMMARY_TITLE = "Summary of all tests:"
# Results table columns, in IOR's JSON names.
_RESULT_NAMES = {"access": "access", "bw(MiB/s)": "bwMiB", "IOPS": "iops",
                 "Latency(s)": "latency", "block(KiB)": "blockKiB", "xfer(KiB)": "xferKiB",
                 "open(s)": "openTime", "wr/rd(s)": "wrRdTime", "close(s)": "closeTime",
                 "total(s)": "totalTime", "iter": "repetition"}  # fmt: skip
# Summary table columns, in IOR's JSON names ("StdDev" follows the mean it belongs to).
_SUMMARY_NAMES = {"Operation": "operation", "Max(MiB)": "bwMaxMIB", "Min(MiB)": "bwMinMIB",
                  "Mean(MiB)": "bwMeanMIB", "Max(OPs)": "OPsMax", "Min(OPs)": "OPsMin",
                  "Mean(OPs)": "OPsMean", "Mean(s)": "MeanTime", "Stonewall(s)": "StoneWallTime",
                  "Stonewall(MiB)": "StoneWallbwMeanMIB", "Test#": "TestID", "#Tasks": "numTasks",
                  "tPN": "tasksPerNode", "reps": "repetitions", "fPP": "filePerProc",
                  "reord": "reorderTasks", "reordoff": "taskPerNodeOffset",
                  "reordrand": "reorderTasksRandom", "seed": "reorderTasksRandomSeed",
                  "segcnt": "segmentCount", "blksiz": "blockSize", "xsize": "transferSize",
                  "aggs(MiB)": "xsizeMiB", "API": "API", "RefNum": "ReferenceNumber"}  # fmt: skip
_STD_AFTER = {"bwMeanMIB": "bwStdMIB", "OPsMean": "OPsSD"}
_TEXT_COLUMNS = frozenset({"operation", "access", "API"})
_OPERATIONS = frozenset({"write", "read", "remove"})


def load_ior_text(path: Path) -> IorReport:
    return parse_ior_text(read_tool_output(path), str(path))


def parse_ior_text(text: str, source: str) -> IorReport:
    """Parse IOR's text output; a missing summary table is an error naming the line."""
    banner = IOR_BANNER.search(text)
    if banner is None:
        raise DataFormatError(
            source,
            "line 1",
            f"not IOR text output (no 'IOR-<version>:' banner): {looks_like(text)}",
        )
    lines = text.splitlines()
    first = text.count("\n", 0, banner.start())
    header: dict[str, str] = {}
    options: list[dict[str, str]] = []
    results: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    maxima: dict[str, float] = {}
    notes: list[str] = []
    test_id = 0
    section = "header"
    columns: list[str] = []
    for number, line in enumerate(lines[first + 1 :], start=first + 2):
        stripped = line.strip()
        if not stripped or set(stripped) <= {"-", " "}:
            if not stripped and section == "options":
                section = "test"
            continue
        if stripped.startswith("Options:"):
            section = "options"
            options.append({})
            continue
        if stripped.startswith("Results:"):
            section = "results"
            continue
        if stripped.startswith(_SUMMARY_TITLE):
            section, columns = "summary", []
            continue
        if match := _MAX.match(stripped):
            maxima[match[1].lower()] = float(match[2])
            continue
        tokens = stripped.split()
        if section == "results" and tokens[0] == _RESULT_HEADER:
            columns = [_RESULT_NAMES.get(token, token) for token in tokens]
            continue
        if section == "results" and tokens[0] in _OPERATIONS and columns:
            results.append({"TestID": test_id, **_row(tokens, columns, source, number)})
            continue
        if section == "summary" and tokens[0] == "Operation":
            columns = _summary_columns(tokens)
            continue
        if section == "summary" and tokens[0] in _OPERATIONS and columns:
            summary.append(_row(tokens, columns, source, number))
            continue
        pair = _KEY_VALUE.match(line)
        if section == "options" and pair:
            options[-1][pair[1]] = pair[2]
        elif pair and pair[1] in _HEADER_KEYS:
            if pair[1] == "TestID":
                test_id = int(pair[2])
                section = "test"
            header.setdefault(pair[1], pair[2])
            if pair[1] == "Finished":
                header["Finished"] = pair[2]
        else:
            notes.append(stripped)
    if not summary:
        found = failure(text)
        if found is not None:
            raise DataFormatError(source, f"line {found[0]}", f"the IOR run failed: {found[1]}")
        what = "is empty" if section == "summary" else "is missing"
        raise DataFormatError(
            source,
            describe_end(text),
            f"IOR text output ends before its summary: the 'Summary of all tests:' table {what} "
            "(truncated output?)",
        )
    return IorReport(
        source=source,
        version=banner[1],
        command_line=header.get("Command line", ""),
        began=header.get("Began", ""),
        finished=header.get("Finished", ""),
        summary=pd.DataFrame(summary),
        results=pd.DataFrame(results),
        parameters=[],
        options=options,
        format="text",
        notes=split_notes(notes),
        max_mib=maxima,
    )


_HEADER_KEYS = frozenset(
    {"Began", "Command line", "Machine", "TestID", "StartTime", "Path", "FS", "Finished"}
)


def _summary_columns(tokens: list[str]) -> list[str]:
    columns: list[str] = []
    for token in tokens:
        if token == "StdDev" and columns and columns[-1] in _STD_AFTER:
            columns.append(_STD_AFTER[columns[-1]])
        else:
            columns.append(_SUMMARY_NAMES.get(token, token))
    return columns


def _row(tokens: list[str], columns: list[str], source: str, number: int) -> dict[str, Any]:
    if len(tokens) != len(columns):
        raise DataFormatError(
            source,
            f"line {number}",
            f"IOR table row has {len(tokens)} fields where its header has {len(columns)} "
            "(truncated or cut line?)",
        )
    row: dict[str, Any] = {}
    for column, token in zip(columns, tokens, strict=True):
        if column in _TEXT_COLUMNS:
            row[column] = token
        elif token in ("NA", "-"):
            if column in ("StoneWallTime", "StoneWallbwMeanMIB"):
                continue  # IOR's JSON leaves these out when there was no stonewall
            row[column] = math.nan
        else:
            try:
                value = float(token)
            except ValueError as error:
                raise DataFormatError(
                    source,
                    f"line {number}",
                    f"IOR table column {column!r}: not a number: {token!r}",
                ) from error
            row[column] = int(value) if column in _INTEGER_COLUMNS else value
    return row


_INTEGER_COLUMNS = frozenset(
    {"repetition", "TestID", "numTasks", "tasksPerNode", "repetitions", "filePerProc",
     "reorderTasks", "taskPerNodeOffset", "reorderTasksRandom", "reorderTasksRandomSeed",
     "segmentCount", "blockSize", "transferSize", "ReferenceNumber"}
)  # fmt: skip
