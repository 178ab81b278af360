"""Several tool outputs as one ``workload/summary.json`` document.

Companion files are matched by the names mdtest was given on its command
line: a rank-details CSV named by ``--saveRankPerformanceDetails`` gives the
per-rank rows of that run, per-op CSVs whose prefix ``--savePerOpDataCSV``
named give its latency. A rank-details file without its mdtest output gives
phases from its ``all`` row; per-op files without theirs give latency-only
phases. When two outputs name a phase alike (two IOR runs both have
``write``), their phases are qualified with the file: ``write (a.json)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import pandas as pd

from analysis.convert.fio import fio_phases
from analysis.convert.ior import ior_phases
from analysis.convert.mdtest import mdtest_phases, per_op_latency, rank_detail_phases, rank_rows
from analysis.loaders.detect import ToolOutput
from analysis.loaders.fio import FioReport
from analysis.loaders.ior_model import IorReport
from analysis.loaders.mdtest import MdtestReport
from analysis.loaders.mdtest_csv import PerOpTimes, RankDetails
from analysis.loaders.tools import LoadedOutput
from analysis.phases import MetadataPhase

SUMMARY_VERSION = 1


@dataclass
class ToolSummary:
    """The phases of a set of tool outputs, and what each file contributed."""

    phases: list[dict[str, Any]] = field(default_factory=list)
    repetitions: list[dict[str, Any]] = field(default_factory=list)
    ranks: pd.DataFrame | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        """The ``workload/summary.json`` document (docs/RUN.md)."""
        return {
            "summary_version": SUMMARY_VERSION,
            "phases": self.phases,
            "repetitions": self.repetitions,
            "tool_outputs": self.outputs,
        }


def summarize_outputs(outputs: Sequence[LoadedOutput], root: Path | None = None) -> ToolSummary:
    """Phase rows of every output, companions matched to their runs."""
    names = {id(output): _name(output.path, root) for output in outputs}
    per_op = [o for o in outputs if isinstance(o.report, PerOpTimes)]
    details = [o for o in outputs if isinstance(o.report, RankDetails)]
    runs = [o for o in outputs if not isinstance(o.report, PerOpTimes | RankDetails)]
    claimed: dict[int, str] = {}  # companion -> the run that named it
    groups: list[tuple[LoadedOutput, list[dict[str, Any]], list[dict[str, Any]]]] = []
    rank_frames: list[pd.DataFrame] = []
    for output in runs:
        report = output.report
        repetitions: list[dict[str, Any]] = []
        if isinstance(report, IorReport):
            converted = ior_phases(report)
            phases, repetitions = converted.phases, converted.repetitions
        elif isinstance(report, FioReport):
            phases = fio_phases(report)
        else:
            assert isinstance(report, MdtestReport)
            own_ops = _companions(per_op, report.arguments.get("savePerOpDataCSV"), per_op=True)
            own_details = _companions(details, report.arguments.get("saveRankPerformanceDetails"))
            for companion in own_ops + own_details:
                claimed[id(companion)] = names[id(output)]
            ops = [o.report for o in own_ops if isinstance(o.report, PerOpTimes)]
            phases = [phase.to_row() for phase in mdtest_phases(report, ops)]
            for companion in own_details:
                assert isinstance(companion.report, RankDetails)
                rank_frames.append(rank_rows(companion.report).assign(source=names[id(companion)]))
        groups.append((output, phases, repetitions))
    for output in details:
        if id(output) in claimed:
            continue
        assert isinstance(output.report, RankDetails)
        rows = [phase.to_row() for phase in rank_detail_phases(output.report)]
        groups.append((output, rows, []))
        rank_frames.append(rank_rows(output.report).assign(source=names[id(output)]))
    loose = [o for o in per_op if id(o) not in claimed]
    if loose:
        groups += _latency_only(loose)
    summary = ToolSummary(ranks=pd.concat(rank_frames, ignore_index=True) if rank_frames else None)
    _qualify_clashes(groups, names)
    for output, phases, repetitions in groups:
        for row in phases + repetitions:
            row["source"] = names[id(output)]
        summary.phases += phases
        summary.repetitions += repetitions
    summary.outputs = [_describe(o, names[id(o)], groups, claimed) for o in outputs]
    return summary


def _latency_only(
    per_op: list[LoadedOutput],
) -> list[tuple[LoadedOutput, list[dict[str, Any]], list[dict[str, Any]]]]:
    """Per-op files whose mdtest output is not here: one latency-only phase per prefix."""
    by_prefix: dict[str, list[LoadedOutput]] = {}
    for output in per_op:
        assert isinstance(output.report, PerOpTimes)
        by_prefix.setdefault(output.report.prefix, []).append(output)
    groups: list[tuple[LoadedOutput, list[dict[str, Any]], list[dict[str, Any]]]] = []
    for files in by_prefix.values():
        times = [o.report for o in files if isinstance(o.report, PerOpTimes)]
        rows = [
            MetadataPhase(phase=phase, tool="mdtest", latency=figures).to_row()
            for phase, figures in per_op_latency(times).items()
        ]
        groups.append((files[0], rows, []))
    return groups


def _companions(
    candidates: list[LoadedOutput], named: Any, per_op: bool = False
) -> list[LoadedOutput]:
    """The files an mdtest run wrote under the name it was given."""
    if not isinstance(named, str) or not named:
        return []
    wanted = PurePath(named).name
    if per_op:
        return [o for o in candidates if isinstance(o.report, PerOpTimes)
                and PurePath(o.report.prefix).name == wanted]  # fmt: skip
    return [o for o in candidates if o.path.name == wanted]


def _qualify_clashes(
    groups: list[tuple[LoadedOutput, list[dict[str, Any]], list[dict[str, Any]]]],
    names: dict[int, str],
) -> None:
    """Phases named alike by several outputs get the file name after them."""
    owners: dict[str, set[int]] = {}
    for output, phases, _ in groups:
        for row in phases:
            owners.setdefault(str(row["phase"]), set()).add(id(output))
    clashing = {phase for phase, files in owners.items() if len(files) > 1}
    for output, phases, repetitions in groups:
        for row in phases + repetitions:
            if row["phase"] in clashing:
                row["phase"] = f"{row['phase']} ({names[id(output)]})"


def _describe(
    output: LoadedOutput,
    name: str,
    groups: list[tuple[LoadedOutput, list[dict[str, Any]], list[dict[str, Any]]]],
    claimed: dict[int, str],
) -> dict[str, Any]:
    report = output.report
    phases = sum(len(rows) for owner, rows, _ in groups if owner is output)
    entry: dict[str, Any] = {
        "file": name,
        "format": output.kind.value,
        "tool": output.tool,
        "version": _version(report),
        "command_line": getattr(report, "command_line", ""),
        "phases": phases,
    }
    if id(output) in claimed:
        role = "latency" if output.kind is ToolOutput.MDTEST_PER_OP else "per-rank rows"
        entry["used_as"] = f"{role} of {claimed[id(output)]}"
    return entry


def _version(report: Any) -> str:
    if isinstance(report, FioReport):
        return report.fio_version.removeprefix("fio-")
    return str(getattr(report, "version", ""))


def _name(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return str(path.relative_to(root))
        except ValueError:
            pass
    return path.name
