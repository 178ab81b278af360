"""Find and decode the one JSON document inside a tool's output (a JSON-lines
file's objects: ``analysis.jsonlines``).

fio and iostat print warnings before (and sometimes after) their JSON; the
document is taken from the first line that opens an object and decoding stops
where the object ends. Errors name the source and the line and column.
"""

from __future__ import annotations

import json
import re
from typing import Any

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
