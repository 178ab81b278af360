"""``benchfs history import``: results directories (and diagnose outputs) into the
history. Each is written in a transaction of its own, replacing what an earlier
import of it wrote, so importing again changes nothing."""

from __future__ import annotations

import socket
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from analysis.bounded import load_json_bounded
from analysis.diagnose import DiagnoseDocument, DiagnoseFormatError
from analysis.layout import MANIFEST
from benchfs.errors import BenchfsError, HistoryError
from benchfs.history.diagnose_rows import diagnose_record
from benchfs.history.model import RunRecord
from benchfs.history.rows import run_record
from benchfs.history.store import History

# What `benchfs diagnose --output DIR` writes (benchfs.health.report.write_reports).
DIAGNOSE_DOCUMENT = "diagnose.json"


@dataclass
class Imported:
    recorded: int = 0
    nodes: int = 0
    problems: list[str] = field(default_factory=list)


def import_paths(history: History, paths: Iterable[Path]) -> Imported:
    """Every run under ``paths``, oldest first; a directory that cannot be read is
    named in ``problems`` and the others still go in. A history that cannot be
    written stops the import (it would fail for every run)."""
    done = Imported()
    for path in paths:
        if not path.is_dir():
            done.problems.append(f"{path}: not a directory")
            continue
        found = sorted(_runs_under(path))
        if not found:
            done.problems.append(f"{path}: no results directory (manifest.json) or diagnose.json")
        for directory in found:
            try:
                record = _record(directory)
            except (BenchfsError, OSError, ValueError, KeyError) as error:
                done.problems.append(f"{directory}: not imported: {error}")
                continue
            history.write(record)
            done.recorded += 1
            done.nodes += len(record.nodes)
    return done


def _runs_under(path: Path) -> Iterator[Path]:
    """``path`` itself when it is a run, else the runs one level below (not hidden)."""
    if (path / MANIFEST).is_file() or (path / DIAGNOSE_DOCUMENT).is_file():
        yield path
        return
    for child in path.iterdir():
        hidden = child.name.startswith(".")
        if not hidden and ((child / MANIFEST).is_file() or (child / DIAGNOSE_DOCUMENT).is_file()):
            yield child


def _record(directory: Path) -> RunRecord:
    if (directory / MANIFEST).is_file():
        return run_record(directory)
    document = load_json_bounded(
        directory / DIAGNOSE_DOCUMENT, what="diagnose document", error=HistoryError
    )
    try:
        report = DiagnoseDocument.read(document, str(directory / DIAGNOSE_DOCUMENT))
    except DiagnoseFormatError as exc:
        raise HistoryError(str(exc)) from exc
    return diagnose_record(
        report,
        cluster=socket.gethostname(),
        command="benchfs diagnose",
        results_dir=str(directory.resolve()),
    )
