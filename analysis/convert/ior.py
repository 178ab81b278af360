"""An IOR run as data phase rows: IOR's own summary names plus where they came from.

Phases keep IOR's names (``write``, ``read``; ``write (test 1)`` when the
run held several tests). IOR's backends issue one transfer at a time per
rank, so the queue depth is 1, except for its AIO backend (``--aio.max-pending``,
else unknown) and where the backend is not known (CSV output).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from analysis.convert._values import plain, plain_row
from analysis.loaders.ior_model import IorReport
from analysis.phases import Provenance

# IOR's bookkeeping of a repetition that is not a figure of the phase.
_RESULT_SKIP = frozenset({"access", "TestID"})
_MAX_PENDING = re.compile(r"^--aio\.max-pending(?:=(\d+))?$")


@dataclass(frozen=True)
class IorPhases:
    phases: list[dict[str, Any]]
    repetitions: list[dict[str, Any]]


def ior_phases(report: IorReport) -> IorPhases:
    """The phase rows (and per-repetition rows) of one IOR output."""
    summary = report.summary
    tests = sorted({int(t) for t in summary["TestID"]}) if "TestID" in summary.columns else [0]
    names: dict[tuple[int, str], str] = {}
    phases: list[dict[str, Any]] = []
    for record in summary.to_dict("records"):
        row = plain_row(record)
        test = int(row.get("TestID") or 0)
        operation = str(row["operation"])
        phase = operation if len(tests) == 1 else f"{operation} (test {test})"
        names[(test, operation)] = phase
        options = _test_options(report, tests.index(test) if test in tests else 0)
        provenance = Provenance(
            tool="ior",
            tool_version=report.version,
            kind="data",
            queue_depth=_queue_depth(row.get("API"), report.command_line),
            access=_access(row, options),
            ordering=options.get("ordering in a file") or _ordering(report, test),
        )
        stonewalled = row.get("StoneWallTime") is not None
        phases.append(
            {"phase": phase, **provenance.fields(), **row, "stonewalled": stonewalled,
             "source": report.source}
        )  # fmt: skip
    return IorPhases(phases, _repetitions(report, names))


def _repetitions(report: IorReport, names: dict[tuple[int, str], str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if report.results.empty:
        return rows
    for record in report.results.to_dict("records"):
        test, operation = int(plain(record.get("TestID")) or 0), str(record.get("access"))
        phase = names.get((test, operation))
        if phase is None:
            continue  # "remove" timings are not phases
        row = {key: value for key, value in plain_row(record).items() if key not in _RESULT_SKIP}
        rows.append({"phase": phase, "tool": "ior", **row})
    return rows


def _test_options(report: IorReport, index: int) -> dict[str, str]:
    return report.options[index] if index < len(report.options) else {}


def _access(row: dict[str, Any], options: dict[str, str]) -> str | None:
    if row.get("filePerProc") is not None:
        return "file-per-process" if int(row["filePerProc"]) else "single-shared-file"
    return options.get("access")


def _ordering(report: IorReport, test: int) -> str | None:
    for parameters in report.parameters:
        if int(parameters.get("testID", 0)) == test and "randomOffset" in parameters:
            return "random" if int(parameters["randomOffset"]) else "sequential"
    return None


def _queue_depth(api: Any, command_line: str) -> int | None:
    if api is None:
        return None  # IOR's CSV does not name the backend
    if str(api).upper() != "AIO":
        return 1
    try:
        words = shlex.split(command_line)
    except ValueError:
        words = command_line.split()
    for index, word in enumerate(words):
        if match := _MAX_PENDING.match(word):
            value = match[1] or (words[index + 1] if index + 1 < len(words) else "")
            return int(value) if value.isdigit() else None
    return None
