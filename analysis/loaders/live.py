"""Read ``live/samples.jsonl`` (one object per node and interval, written
while the phases ran, benchfs/run/live) into one table, a row per line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.bounded import RESULTS_BYTES, read_bounded_text
from analysis.errors import DataFormatError, UnreadableFileError
from analysis.jsonlines import json_object_lines

# The columns every line has (the figures beside them vary with the source).
KEY_COLUMNS = ["phase", "repetition", "node", "start_s", "end_s", "judged_ms", "others_ms", "slow"]


def parse_live_samples(
    text: str, source: str, *, allow_partial: bool = False
) -> tuple[pd.DataFrame, list[str]]:
    """The samples in ``text`` and notes on what was left out: a last line cut
    short by a stopped run is left out with a note when ``allow_partial``;
    any other bad line names its number."""
    notes: list[str] = []
    rows = []
    for number, row in json_object_lines(text, source, allow_partial=allow_partial, notes=notes):
        if not {"phase", "node"} <= set(row):
            raise DataFormatError(source, f"line {number}", "a sample names its phase and node")
        rows.append(row)
    frame = pd.DataFrame(rows)
    for column in KEY_COLUMNS:
        if column not in frame.columns:
            frame[column] = pd.Series(dtype=object)
    return frame, notes


def load_live_samples(path: Path, *, allow_partial: bool = False) -> tuple[pd.DataFrame, list[str]]:
    text = read_bounded_text(
        path, limit=RESULTS_BYTES, what="live samples", error=UnreadableFileError
    )
    return parse_live_samples(text, str(path), allow_partial=allow_partial)
