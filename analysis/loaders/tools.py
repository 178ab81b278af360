"""Load any output of IOR, mdtest or fio: detect its family, then parse it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from analysis.errors import DataFormatError
from analysis.loaders._tooltext import read_tool_output
from analysis.loaders.detect import ToolOutput, detect
from analysis.loaders.fio import FioFormatError, FioReport, parse_fio_json
from analysis.loaders.fio_terse import parse_fio_terse
from analysis.loaders.ior import parse_ior_json
from analysis.loaders.ior_csv import parse_ior_csv
from analysis.loaders.ior_model import IorReport
from analysis.loaders.ior_text import parse_ior_text
from analysis.loaders.mdtest import MdtestReport, parse_mdtest_text
from analysis.loaders.mdtest_csv import PerOpTimes, RankDetails, parse_per_op, parse_rank_details

ToolReport = IorReport | MdtestReport | RankDetails | PerOpTimes | FioReport


@dataclass(frozen=True)
class LoadedOutput:
    """One tool output file and what it says."""

    path: Path
    kind: ToolOutput
    report: ToolReport

    @property
    def tool(self) -> str:
        return self.kind.tool


def load_tool_output(path: Path, kind: ToolOutput | None = None) -> LoadedOutput:
    """Parse ``path`` as ``kind`` (detected from its content when not given)."""
    text = read_tool_output(path)
    found = kind or detect(text)
    if found is None:
        raise DataFormatError(path, "line 1", "not an output of IOR, mdtest or fio")
    return LoadedOutput(path, found, parse_tool_output(text, found, path))


def parse_tool_output(text: str, kind: ToolOutput, path: Path) -> ToolReport:
    source = str(path)
    if kind is ToolOutput.IOR_JSON:
        return parse_ior_json(text, source)
    if kind is ToolOutput.IOR_TEXT:
        return parse_ior_text(text, source)
    if kind is ToolOutput.IOR_CSV:
        return parse_ior_csv(text, source)
    if kind is ToolOutput.MDTEST_TEXT:
        return parse_mdtest_text(text, source)
    if kind is ToolOutput.MDTEST_RANK_DETAILS:
        return parse_rank_details(text, source)
    if kind is ToolOutput.MDTEST_PER_OP:
        return parse_per_op(text, path.name, source)
    terse = kind is ToolOutput.FIO_TERSE
    try:
        return parse_fio_terse(text, source) if terse else parse_fio_json(text, source)
    except FioFormatError as error:
        detail = str(error).removeprefix(source)
        where = re.match(r"^:(\d+)(?::(\d+))?:? ", detail)
        if where is None:
            position = kind.value
        else:
            position = f"line {where[1]}" + (f" column {where[2]}" if where[2] else "")
        reason = detail[where.end() :] if where else detail.lstrip(": ")
        raise DataFormatError(path, position, reason) from error
