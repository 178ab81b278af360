"""Read ``verdicts.json`` back into ``analysis.verdicts.Verdicts``, and the
verdicts as one table (a row per verdict, the columns a database keeps)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from analysis.errors import DataFormatError
from analysis.verdicts import FORMAT, Verdicts

COLUMNS = [
    "node", "host", "phase", "repetition", "kind", "metric", "op", "status", "layer",
    "pattern", "onset_s", "intervals", "unit", "p50", "p99", "others_p50", "others_p99",
    "alerts", "source", "verdict",
]  # fmt: skip


def parse_verdicts(text: str, source: str) -> Verdicts:
    """The document in ``text``; a wrong format, version or field names its place."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise DataFormatError(source, f"line {error.lineno}", f"not JSON: {error.msg}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise DataFormatError(source, "format", f"not a {FORMAT} document")
    try:
        return Verdicts.model_validate(document)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "document"
        raise DataFormatError(source, where, str(first["msg"])) from None


def load_verdicts(path: Path) -> Verdicts:
    return parse_verdicts(path.read_text(errors="replace"), str(path))


def verdicts_frame(verdicts: Verdicts) -> pd.DataFrame:
    """One row per verdict; intervals as ``start-end`` seconds, alerts counted."""
    rows = []
    for v in verdicts.verdicts:
        spans = ", ".join(
            f"{i.start_s:g}-{'end' if i.end_s is None else f'{i.end_s:g}'}" for i in v.intervals
        )
        rows.append(
            [v.node, v.host, v.phase, v.repetition, v.kind, v.metric, v.op, v.status, v.layer,
             v.pattern, v.onset_s, spans, v.figures.unit, v.figures.p50, v.figures.p99,
             v.figures.others_p50, v.figures.others_p99, len(v.alerts), v.source, v.verdict]
        )  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)
