"""The IO500 suite's summary from the reference's io500 binary
(``suite.tool = "io500"``): one row per scored phase, in IO500's order, with
the binary's own figure (``io500_rate``), time and verdict, the score as the
binary printed it, and the reasons it gave (``result.txt``'s ``ERROR
INVALID`` lines). The phases it runs but does not score (the timestamp,
``ior-rnd4K-easy-read``) are listed under ``unscored``.

A data row carries the figure as IOR's mean bandwidth (``bwMeanMIB`` = GiB/s
x 1024) and a metadata row as its rate (``rate_mean_ops_s`` = kIOPS x 1000),
so ``analysis.io500.phase_figure`` and ``compare`` read them as any suite's;
the time is the binary's time of the whole phase.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analysis.convert.io500 import repetition_row
from analysis.convert.summary import SUMMARY_VERSION
from analysis.io500 import GROUPS, PHASE_NAMES, STONEWALLED_PHASES, UNITS
from analysis.loaders.io500 import Io500Log, Io500Phase, Io500Result
from analysis.phases import SHARED_DIR, UNIQUE_DIR

RUN_SECTION = "run"
FLAGGED = "marked [INVALID] by io500"
_DATA_ACCESS = {"ior-easy": "file-per-process", "ior-hard": "single-shared-file"}
_METADATA_ACCESS = {"mdtest-easy": UNIQUE_DIR, "mdtest-hard": SHARED_DIR}


def _data_row(line: Io500Phase, family: str, operation: str) -> dict[str, Any]:
    bandwidth = line.value * 1024.0
    return {"kind": "data", "tool": "ior", "operation": operation, "access": _DATA_ACCESS[family],
            "ordering": "sequential", "bwMaxMIB": bandwidth, "bwMinMIB": bandwidth,
            "bwMeanMIB": bandwidth, "bwStdMIB": 0.0, "MeanTime": line.time_s}  # fmt: skip


def _metadata_row(line: Io500Phase, family: str, pairs: Mapping[str, str]) -> dict[str, Any]:
    rate = line.value * 1000.0
    row: dict[str, Any] = {
        "kind": "metadata", "tool": "io500" if family == "find" else "mdtest",
        "access": _METADATA_ACCESS.get(family), "repetitions": 1, "rate_max_ops_s": rate,
        "rate_min_ops_s": rate, "rate_mean_ops_s": rate, "rate_stddev_ops_s": 0.0,
        "time_max_s": line.time_s, "time_min_s": line.time_s, "time_mean_s": line.time_s,
        "time_stddev_s": 0.0,
    }  # fmt: skip
    if family == "find":
        row["items"] = _integer(pairs.get("total-files"))
        row["found"] = _integer(pairs.get("found"))
    return row


def _integer(value: str | None) -> int | None:
    return int(value) if value is not None and value.strip().isdigit() else None


def phase_row(
    line: Io500Phase, result: Io500Result, log: Io500Log, tasks: int, stonewall_s: float
) -> dict[str, Any]:
    """One scored phase's row, with the binary's verdict and its reasons; a
    write phase that ran as long as the stonewall counts as stonewalled."""
    family, _, operation = line.name.rpartition("-")
    pairs = log.pairs.get(line.name, {})
    if line.name.startswith("ior-"):
        row = {"phase": line.name, **_data_row(line, family, operation), "numTasks": tasks}
    else:
        family = "find" if line.name == "find" else family
        row = {"phase": line.name, **_metadata_row(line, family, pairs), "tasks": tasks}
    reasons = list(log.reasons.get(line.name, ())) if not line.valid else []
    return {
        **row,
        "tool_version": result.version,
        "stonewalled": line.name in STONEWALLED_PHASES and 0 < stonewall_s <= line.time_s,
        "command": pairs.get("exe"),
        "io500_rate": line.value,
        "io500_unit": UNITS[GROUPS[line.name]],
        "valid": line.valid,
        "invalid_reasons": reasons or ([] if line.valid else [FLAGGED]),
    }


def _unscored(line: Io500Phase) -> dict[str, Any]:
    return {"phase": line.name, "value": line.value, "unit": line.unit, "time_s": line.time_s,
            "valid": line.valid}  # fmt: skip


def binary_suite_document(
    result: Io500Result, log: Io500Log, suite: Mapping[str, Any]
) -> dict[str, Any]:
    """``workload/summary.json`` of a suite the io500 binary ran; ``suite``
    says what ran (``tasks`` among it, and ``stonewall_s``: the binary's
    ``stonewall-time``, whole seconds)."""
    tasks = int(suite["tasks"])
    stonewall_s = float(suite.get("stonewall_s") or 0.0)
    lines = {line.name: line for line in result.phases if line.scored}
    rows = [
        phase_row(lines[name], result, log, tasks, stonewall_s)
        for name in PHASE_NAMES
        if name in lines
    ]
    missing = [name for name in PHASE_NAMES if name not in lines]
    reasons = list(log.reasons.get(RUN_SECTION, ()))
    if missing:
        reasons.append(f"phases not run: {', '.join(missing)}")
    reasons += [f"{row['phase']}: {why}" for row in rows for why in row["invalid_reasons"]]
    unscored_reasons = [
        f"{line.name}: {why}"
        for line in result.phases
        if not line.scored and not line.valid
        for why in (log.reasons.get(line.name) or (FLAGGED,))
    ]
    reasons += unscored_reasons
    if not result.valid and not reasons:
        reasons.append(f"the score is {FLAGGED}")
    return {
        "summary_version": SUMMARY_VERSION,
        "suite": {**suite, "io500_version": result.version, "io500_mode": result.mode},
        "score": result.score,
        "bandwidth": result.bandwidth,
        "metadata": result.metadata,
        "valid": result.valid,
        "invalid_reasons": reasons,
        "phases": rows,
        "repetitions": [repetition_row(row) for row in rows],
        "unscored": [_unscored(line) for line in result.phases if not line.scored],
        "errors": 0,
        "verify_errors": 0,
    }
