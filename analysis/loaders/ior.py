"""Parse IOR's JSON output (``-O summaryFormat=JSON``), IOR 3.3 and 4.0 layout.

IOR writes its JSON with printf: doubles come out as ``%.4f``, so a zero
time gives bare ``inf`` or ``-nan`` (not JSON); some wrappers quote them
(``"inf"``, ``"Infinity"``). MPI and IOR warnings may precede or follow the
document, and the ``summary`` entries repeat some keys. This reader accepts
all of that and keeps IOR's own field names (``bwMaxMIB``, ``OPsMean``, ...).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.errors import DataFormatError

_DOCUMENT_START = re.compile(r'^[ \t]*\{[ \t]*$|^[ \t]*\{\s*"Version"', re.MULTILINE)
# Bare non-finite numbers as C's printf writes them, in value position.
_BARE_NON_FINITE = re.compile(r"(?<=[:\[,])(\s*)(-?)(inf|infinity|nan)\b", re.IGNORECASE)
_NON_FINITE_TEXT = {"inf": math.inf, "+inf": math.inf, "infinity": math.inf, "-inf": -math.inf,
                    "-infinity": -math.inf, "nan": math.nan, "-nan": math.nan}  # fmt: skip
_TEXT_FIELDS = frozenset({"operation", "API", "access"})


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

    def operation(self, name: str) -> dict[str, Any]:
        """The summary row of one operation (``write`` or ``read``)."""
        rows = self.summary[self.summary["operation"] == name]
        if rows.empty:
            raise KeyError(f"{self.source}: IOR summary has no '{name}' operation")
        return {str(key): value for key, value in rows.iloc[0].items()}


def load_ior_json(path: Path) -> IorReport:
    return parse_ior_json(path.read_text(errors="replace"), str(path))


def parse_ior_json(text: str, source: str) -> IorReport:
    """Parse IOR JSON out of ``text`` (which may hold other output around it)."""
    document = _decode(text, source)
    summary = pd.DataFrame([_numbers(entry) for entry in document.get("summary", [])])
    if summary.empty or "operation" not in summary.columns:
        raise DataFormatError(source, "summary", "IOR JSON has no 'summary' operations")
    results, parameters = [], []
    for test in document.get("tests", []):
        parameters.append(dict(test.get("Parameters", {})))
        for repetition, entries in enumerate(test.get("Results", [])):
            for entry in entries if isinstance(entries, list) else [entries]:
                row = {"TestID": test.get("TestID"), "repetition": repetition}
                row.update(_numbers(entry))
                results.append(row)
    return IorReport(
        source=source,
        version=str(document.get("Version", "")),
        command_line=str(document.get("Command line", "")),
        began=str(document.get("Began", "")),
        finished=str(document.get("Finished", "")),
        summary=summary,
        results=pd.DataFrame(results),
        parameters=parameters,
    )


def _decode(text: str, source: str) -> dict[str, Any]:
    match = _DOCUMENT_START.search(text)
    if match is None:
        raise DataFormatError(source, "line 1", "no IOR JSON document found")
    start = text.index("{", match.start())
    cleaned = _BARE_NON_FINITE.sub(_replace_non_finite, text[start:])
    try:
        document, _ = json.JSONDecoder().raw_decode(cleaned)
    except json.JSONDecodeError as error:
        line = text.count("\n", 0, start) + error.lineno
        raise DataFormatError(
            source, f"line {line} column {error.colno}", f"corrupt IOR JSON: {error.msg}"
        ) from error
    if not isinstance(document, dict):
        raise DataFormatError(source, f"line {text.count(chr(10), 0, start) + 1}", "not an object")
    return document


def _replace_non_finite(match: re.Match[str]) -> str:
    space, sign, word = match.groups()
    if word.lower() == "nan":
        return f"{space}NaN"
    return f"{space}{sign}Infinity"


def _numbers(entry: dict[str, Any]) -> dict[str, Any]:
    """Turn quoted numbers (``"inf"``, ``"1234.5"``) into floats; keep other strings."""
    converted: dict[str, Any] = {}
    for key, value in entry.items():
        if isinstance(value, str):
            text = value.strip().lower()
            if text in _NON_FINITE_TEXT:
                value = _NON_FINITE_TEXT[text]
            else:
                with contextlib.suppress(ValueError):
                    value = float(value) if key not in _TEXT_FIELDS else value
        converted[key] = value
    return converted
