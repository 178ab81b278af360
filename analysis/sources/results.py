"""Open what a user points at: a results directory of `benchfs run`, a directory
of IOR, mdtest or fio outputs made some other way, or one such output file."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.convert.summary import summarize_outputs
from analysis.errors import DataFormatError, MissingDataError
from analysis.layout import RunLayout
from analysis.loaders.run import RunData, load_run, read_results_text
from analysis.loaders.tools import load_tool_output
from analysis.sources.tool_dir import load_tool_dir, load_tool_outputs, no_outputs_error


def is_results_dir(path: Path) -> bool:
    """Whether ``path`` is a results directory of `benchfs run` (it has a manifest)."""
    return RunLayout(path).manifest.is_file()


def load_results(path: Path | str, *, allow_partial: bool = False) -> RunData:
    """A results directory with a manifest, else the tool outputs under ``path``."""
    root = Path(path)
    if is_results_dir(root):
        return load_run(root, allow_partial=allow_partial)
    return load_tool_dir(root, allow_partial=allow_partial)


@dataclass
class PhaseSource:
    """The phases of one path, and the ``workload/summary.json`` document they form."""

    path: Path
    workload: pd.DataFrame
    document: dict[str, Any]
    ranks: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)


def load_phase_source(path: Path | str, *, allow_partial: bool = False) -> PhaseSource:
    """Phases of a results directory, a directory of tool outputs, or one output file."""
    target = Path(path)
    if target.is_dir() and is_results_dir(target):
        run = load_run(target, allow_partial=allow_partial)
        document = _summary_document(RunLayout(target).summary)
        return PhaseSource(target, run.workload, document, run.ranks, run.notes)
    if not target.exists():
        raise MissingDataError(f"{target}: no such file or directory")
    if target.is_file():
        summary = summarize_outputs([load_tool_output(target)], target.parent)
        notes: list[str] = []
    else:
        found = load_tool_outputs(target, allow_partial=allow_partial)
        if not found.outputs:
            raise no_outputs_error(target)
        summary = summarize_outputs(found.outputs, target)
        notes = found.notes
    return PhaseSource(
        target, pd.DataFrame(summary.phases), summary.document(), summary.ranks, notes
    )


def _summary_document(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(read_results_text(path))
    except json.JSONDecodeError as error:
        raise DataFormatError(
            path, f"line {error.lineno} column {error.colno}", error.msg
        ) from error
    return document if isinstance(document, dict) else {"phases": document}
