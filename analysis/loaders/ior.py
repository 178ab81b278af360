"""Parse IOR's JSON output (``-O summaryFormat=JSON``), IOR 3.3 to 4.1 layout.

IOR writes its JSON with printf: doubles come out as ``%.4f``, so a zero
time gives bare ``inf`` or ``-nan`` (not JSON); some wrappers quote them
(``"inf"``, ``"Infinity"``). MPI and IOR warnings may precede or follow the
document, and when the JSON goes to stdout, stonewall and warning lines land
between its lines (IOR prints them on the same stream while the document is
open). The ``summary`` entries repeat some keys. This reader accepts all of
that, keeps the lines it took out as notes, and keeps IOR's own field names
(``bwMaxMIB``, ``OPsMean``, ...).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.errors import DataFormatError
from analysis.loaders._tooltext import failure, read_tool_output
from analysis.loaders.detect import looks_like
from analysis.loaders.ior_model import NOTE_LINE, IorReport, split_notes

__all__ = ["IorReport", "load_ior_json", "parse_ior_json"]

_DOCUMENT_START = re.compile(r'^[ \t]*\{[ \t]*$|^[ \t]*\{\s*"Version"', re.MULTILINE)
# Bare non-finite numbers as C's printf writes them, in value position.
_BARE_NON_FINITE = re.compile(r"(?<=[:\[,])(\s*)(-?)(inf|infinity|nan)\b", re.IGNORECASE)
_NON_FINITE_TEXT = {"inf": math.inf, "+inf": math.inf, "infinity": math.inf, "-inf": -math.inf,
                    "-infinity": -math.inf, "nan": math.nan, "-nan": math.nan}  # fmt: skip
_TEXT_FIELDS = frozenset({"operation", "API", "access"})


def load_ior_json(path: Path) -> IorReport:
    return parse_ior_json(read_tool_output(path), str(path))


def parse_ior_json(text: str, source: str) -> IorReport:
    """Parse IOR JSON out of ``text`` (which may hold other output around and inside it)."""
    document, notes = _decode(text, source)
    summary = pd.DataFrame([_numbers(entry) for entry in document.get("summary", [])])
    if summary.empty or "operation" not in summary.columns:
        found = failure(text)
        reason = "IOR JSON has no 'summary' operations"
        if found is not None:
            raise DataFormatError(
                source, f"line {found[0]}", f"{reason}: the run failed: {found[1]}"
            )
        raise DataFormatError(source, "summary", reason)
    results, parameters, options = [], [], []
    for test in document.get("tests", []):
        parameters.append(dict(test.get("Parameters", {})))
        options.append({str(k): str(v) for k, v in dict(test.get("Options", {})).items()})
        for repetition, entry in _result_entries(test.get("Results", [])):
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
        options=options,
        format="json",
        notes=notes,
    )


def _result_entries(results: Any) -> list[tuple[int, dict[str, Any]]]:
    """(repetition, entry) pairs. IOR 3.3/4.0 nest one list per repetition; 4.1
    writes the entries flat, and a repeated ``access`` starts the next repetition."""
    pairs: list[tuple[int, dict[str, Any]]] = []
    repetition, seen = 0, set[str]()
    for index, item in enumerate(results if isinstance(results, list) else []):
        if isinstance(item, list):
            pairs += [(index, entry) for entry in item if isinstance(entry, dict)]
        elif isinstance(item, dict):
            access = str(item.get("access", ""))
            if access in seen:
                repetition, seen = repetition + 1, set()
            seen.add(access)
            pairs.append((repetition, item))
    return pairs


def _decode(text: str, source: str) -> tuple[dict[str, Any], Any]:
    match = _DOCUMENT_START.search(text)
    if match is None:
        found = failure(text)
        if found is not None:
            raise DataFormatError(
                source,
                f"line {found[0]}",
                f"no IOR JSON document found: the run failed: {found[1]}",
            )
        raise DataFormatError(source, "line 1", f"no IOR JSON document found: {looks_like(text)}")
    start = text.index("{", match.start())
    note_lines = [m.group(0) for m in NOTE_LINE.finditer(text)]
    # Blank out note lines (keeping the line count, so errors name the file's lines).
    body = NOTE_LINE.sub("", text[start:])
    cleaned = _BARE_NON_FINITE.sub(_replace_non_finite, body)
    try:
        document, _ = json.JSONDecoder().raw_decode(cleaned)
    except json.JSONDecodeError as error:
        found = failure(text)
        if found is not None:  # the run died while IOR was writing the document
            raise DataFormatError(
                source, f"line {found[0]}", f"the IOR run failed: {found[1]}"
            ) from error
        line = text.count("\n", 0, start) + error.lineno
        reason = f"corrupt IOR JSON: {error.msg}"
        if not cleaned[error.pos :].strip():
            reason = "IOR JSON ends before its document closes (truncated output)"
        raise DataFormatError(source, f"line {line} column {error.colno}", reason) from error
    if not isinstance(document, dict):
        raise DataFormatError(source, f"line {text.count(chr(10), 0, start) + 1}", "not an object")
    return document, split_notes(note_lines)


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
