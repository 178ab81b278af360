"""Writing runs into the history, and opening the history a command names.

``record_safely`` is what a run, ``diagnose`` and ``bench cluster`` call once
their results are written: it never raises, and says in one line where the
run went or why it did not. ``record_left_run`` is the same for a run whose
orchestrator died, once ``benchfs clean`` (or the next run) marked it aborted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchfs.config.model import HistoryConfig
from benchfs.errors import BenchfsError, HistoryError
from benchfs.history.model import RunRecord
from benchfs.history.rows import run_record
from benchfs.history.store import History, Location


def open_history(results_dir: str | Path, config: HistoryConfig) -> History:
    """The history of ``config`` (``history.url``, else under ``results_dir``)."""
    return History(Location.of(results_dir, config.url), lock_timeout_s=config.lock_timeout_s)


def record_run_dir(history: History, run_dir: Path) -> RunRecord:
    """Write one results directory's rows (again: the same rows)."""
    record = run_record(run_dir)
    history.write(record)
    return record


def record_safely(
    results_dir: str | Path, config: HistoryConfig, make: Callable[[], RunRecord]
) -> str:
    """Write ``make()``'s rows; the line that says where they went, or why not.
    Nothing here fails the command: the results directory stays the source of truth."""
    if not config.enabled:
        return "history not written: history.enabled is false"
    try:
        history = open_history(results_dir, config)
    except HistoryError as error:
        return f"history not written: {error}"
    try:
        record = make()
        history.write(record)
    except BenchfsError as error:
        return f"history not written: {error}"
    except Exception as error:  # a results directory no reader expected: the run stands
        return f"history not written: {history.shown}: {type(error).__name__}: {error}"
    return f"history: {record.run.status} run recorded in {history.shown}"


def record_left_run(run_dir: Path, effective_config: Mapping[str, Any]) -> str:
    """A results directory into the history its own run named (its ``[history]``,
    under its results root, ``run_dir``'s parent); the line that says where, or why not."""
    try:
        config = HistoryConfig.model_validate(effective_config.get("history") or {})
    except ValidationError as error:
        return f"history not written: {run_dir}: its [history] settings: {error.errors()[0]['msg']}"
    return record_safely(run_dir.parent, config, partial(run_record, run_dir))
