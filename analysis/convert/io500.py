"""The IO500 suite's summary from IOR's and mdtest's outputs, one output per
phase (``suite.tool = "ior"``): each phase's row as the tool conversions
make it, renamed to IO500's phase, with its IO500 figure, one repetition row
per phase, and the score (``analysis.io500``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from analysis.convert.summary import SUMMARY_VERSION, summarize_outputs
from analysis.errors import DataFormatError
from analysis.io500 import GROUPS, UNITS, phase_figure, score_of_rows, with_validity
from analysis.loaders.tools import LoadedOutput

# mdtest's row of each mdtest phase of the suite.
_MDTEST_ROWS = {
    "write": "File creation",
    "stat": "File stat",
    "read": "File read",
    "delete": "File removal",
}


def with_figure(row: dict[str, Any]) -> dict[str, Any]:
    """The row with its IO500 figure (``io500_rate``) and unit."""
    phase = str(row["phase"])
    return {**row, "io500_rate": phase_figure(row), "io500_unit": UNITS[GROUPS[phase]]}


def tool_phase_row(phase: str, output: LoadedOutput, root: Path | None = None) -> dict[str, Any]:
    """IOR's write or read row, or mdtest's row of the phase's operation,
    named as IO500 names the phase."""
    family, _, operation = phase.rpartition("-")
    wanted = operation if family.startswith("ior-") else _MDTEST_ROWS[operation]
    rows = [row for row in summarize_outputs([output], root).phases if row["phase"] == wanted]
    if not rows:
        raise DataFormatError(output.path, "phases", f"no {wanted!r} phase for {phase}")
    return with_figure({**rows[0], "phase": phase})


def repetition_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """The suite runs each phase once: its one repetition, for ``compare``."""
    metadata = row.get("kind") == "metadata"
    figures = (
        {"rate_ops_s": row.get("rate_mean_ops_s"), "time_s": row.get("time_mean_s")}
        if metadata
        else {"bwMiB": row.get("bwMeanMIB"), "wrRdTime": row.get("MeanTime")}
    )
    return {"phase": row["phase"], "repetition": 0, "kind": row.get("kind"), **figures,
            "io500_rate": row["io500_rate"], "io500_unit": row["io500_unit"]}  # fmt: skip


def suite_document(rows: Sequence[dict[str, Any]], suite: Mapping[str, Any]) -> dict[str, Any]:
    """``workload/summary.json`` of a suite from its phase rows (with figures),
    with its validity as the reference judges it."""
    marked, validity = with_validity(rows, suite)
    return {
        "summary_version": SUMMARY_VERSION,
        "suite": dict(suite),
        **score_of_rows(rows).to_json(),
        **validity,
        "phases": marked,
        "repetitions": [repetition_row(row) for row in rows],
        "errors": sum(int(row.get("errors") or 0) for row in rows),
        "verify_errors": sum(int(row.get("verify_errors") or 0) for row in rows),
    }
