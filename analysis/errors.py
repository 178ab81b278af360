"""Errors raised by the analysis package.

Every error names the input that was wrong so that the command line can
print it as one line.
"""

from __future__ import annotations

from pathlib import Path


class AnalysisError(Exception):
    """Base of every error the analysis package raises on purpose."""

    exit_code = 2


class DataFormatError(AnalysisError):
    """A file is truncated, corrupt or of a data version this reader does not read."""

    def __init__(self, path: Path | str, position: int | str, reason: str) -> None:
        self.path = Path(path)
        self.position = position
        self.reason = reason
        where = f"byte {position}" if isinstance(position, int) else str(position)
        super().__init__(f"{self.path}: {reason} (at {where})")


class MissingDataError(AnalysisError):
    """A required part of a results directory or a required column is absent."""


class UnreadableFileError(AnalysisError):
    """A file that cannot be read as it is (not a regular file, too large, not
    UTF-8): the message names it (``analysis.bounded``)."""
