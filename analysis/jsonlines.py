"""Read JSON-lines files: one JSON object a line, as the run's ranks, its live
view and the connect records write them. benchfs reads its own with these too.

A bad line raises ``DataFormatError`` naming the file (or source) and the line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis.errors import DataFormatError


def read_json_lines(path: Path) -> list[dict[str, Any]]:
    """The objects of the JSON-lines file ``path``, blank lines skipped."""
    text = path.read_text(encoding="utf-8", errors="replace")
    return [row for _, row in json_object_lines(text, str(path))]


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
