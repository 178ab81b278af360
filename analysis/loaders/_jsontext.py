"""Find and decode the one JSON document inside a tool's output, and the
objects of a JSON-lines file.

fio and iostat print warnings before (and sometimes after) their JSON; the
document is taken from the first line that opens an object and decoding stops
where the object ends. Errors name the source and the line and column.
"""

from __future__ import annotations

import json
import re
from typing import Any

from analysis.errors import DataFormatError

_OBJECT_START = re.compile(r"^[ \t]*\{", re.MULTILINE)


def position(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of a character index."""
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, column


def decode_embedded_object(
    text: str, source: str, what: str, error: type[ValueError]
) -> dict[str, Any]:
    """Decode the first top-level JSON object in ``text`` or raise ``error``."""
    match = _OBJECT_START.search(text)
    if match is None:
        raise error(f"{source}: no {what} JSON object found (output was {len(text)} characters)")
    start = match.end() - 1
    try:
        document, _end = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        line, column = position(text, exc.pos)
        raise error(f"{source}:{line}:{column}: corrupt {what} JSON: {exc.msg}") from exc
    if not isinstance(document, dict):
        raise error(f"{source}: {what} JSON is not an object")
    return document


def json_object_lines(
    text: str, source: str, *, allow_partial: bool = False, notes: list[str] | None = None
) -> list[tuple[int, dict[str, Any]]]:
    """The objects of a JSON-lines text with their line numbers; blank lines
    are skipped and a bad line raises ``DataFormatError`` naming it. A last
    line cut short (no newline after it, as a stopped writer leaves it) is
    left out with a note in ``notes`` when ``allow_partial``."""
    rows = []
    # Lines end at "\n" only, as a file's lines do (not at U+2028 inside a string).
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            if number == len(lines) and allow_partial:  # the last, with no newline after it
                if notes is not None:
                    notes.append(f"{source}: line {number} was cut short; left out")
                continue
            raise DataFormatError(source, f"line {number}", error.msg) from error
        if not isinstance(row, dict):
            raise DataFormatError(source, f"line {number}", "expected a JSON object")
        rows.append((number, row))
    return rows
