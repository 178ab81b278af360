"""Shared helpers for the text the benchmark tools print.

IOR and mdtest write warnings, MPI messages and their results to the same
stream; these helpers read such a file, find the lines that say a run
failed, and turn a character index into a line number for error messages.
"""

from __future__ import annotations

import re
from pathlib import Path

from analysis.errors import DataFormatError

# Lines that mean the tool did not finish: IOR/mdtest's ERROR macro, IOR 3's
# "ior ERROR:", and Open MPI's abort banner.
_FAILURE = re.compile(r"^(?:\S+ )?ERROR:.*$|^MPI_ABORT was invoked.*$", re.MULTILINE)


def read_tool_output(path: Path) -> str:
    """The file's text; an empty file is an error naming it."""
    try:
        text = path.read_text(errors="replace")
    except UnicodeDecodeError as error:  # pragma: no cover - errors="replace" decodes all
        raise DataFormatError(path, error.start, "not a text file") from error
    if not text.strip():
        raise DataFormatError(path, 0, "empty file: no tool output")
    return text


def line_number(text: str, index: int) -> int:
    """1-based line number of a character index."""
    return text.count("\n", 0, index) + 1


def failure(text: str) -> tuple[int, str] | None:
    """The first line saying the run failed, with its line number, if any."""
    match = _FAILURE.search(text)
    if match is None:
        return None
    return line_number(text, match.start()), match.group(0).strip()


def raise_if_failed(text: str, source: str, what: str) -> None:
    """Raise DataFormatError at the line where the run failed, if it did."""
    found = failure(text)
    if found is not None:
        line, message = found
        raise DataFormatError(source, f"line {line}", f"the {what} run failed: {message}")


def describe_end(text: str) -> str:
    """Where the output stops, for 'truncated' messages: ``line N``."""
    return f"line {line_number(text, len(text.rstrip()))}"
