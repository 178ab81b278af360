"""Parse what the reference's io500 binary leaves in its result directory.

``result_summary.txt`` (the lines it also prints on stdout): ``IO500
version <v> (<mode>)`` (``<v>`` is empty for a binary built where its
Makefile could not ask git: recorded as ``unknown``), one line per phase,
``[RESULT]`` for a scored phase and ``[      ]`` for one that is not (the
timestamp, ``ior-rnd4K-easy-read``), each ``<phase> <value>
<GiB/s|kIOPS> : time <s> seconds`` and `` [INVALID]`` when the binary
found the phase not valid, then ``[SCORE ] Bandwidth <b> GiB/s : IOPS <m>
kiops : TOTAL <score>`` with `` [INVALID]`` for a run that is not valid.

``result.txt`` (ini-like): a ``[run]`` section, then a section per phase
with ``key = value`` lines (``exe``, ``score``, ``t_delta``, find's
``found`` and ``total-files``) and ``; ERROR INVALID <why>`` lines, the
reasons for the verdicts above.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from analysis.errors import DataFormatError
from analysis.loaders._tooltext import read_tool_output

SUMMARY_NAME = "result_summary.txt"
LOG_NAME = "result.txt"
_NUMBER = r"(-?[\d.]+(?:e[-+]?\d+)?|-?nan|-?inf)"
_VERSION = re.compile(r"^IO500 version\s+(\S*)\s*\((\w+)\)\s*$")
UNKNOWN_VERSION = "unknown"
_PHASE = re.compile(
    rf"^\[(RESULT| {{6}})\]\s+(\S+)\s+{_NUMBER}\s+(GiB/s|kIOPS) : time {_NUMBER} seconds"
    r"( \[INVALID\])?\s*$"
)
_SCORE = re.compile(
    rf"^\[SCORE \] Bandwidth {_NUMBER} GiB/s : IOPS {_NUMBER} kiops : TOTAL {_NUMBER}"
    r"( \[INVALID\])?\s*$"
)
_SECTION = re.compile(r"^\[([^\]]+)\]\s*$")
_PAIR = re.compile(r"^([\w.-]+)\s*=\s?(.*)$")
_INVALID = re.compile(r"^; ERROR INVALID (.*)$")


@dataclass(frozen=True)
class Io500Phase:
    """One phase line: its figure (GiB/s or kIOPS), the time it ran, the verdict."""

    name: str
    value: float
    unit: str
    time_s: float
    scored: bool  # [RESULT]; [      ] is a phase that is not part of the score
    valid: bool


@dataclass(frozen=True)
class Io500Result:
    """The binary's summary: its version, every phase line, the score line."""

    version: str
    mode: str
    phases: tuple[Io500Phase, ...]
    bandwidth: float  # GiB/s
    metadata: float  # kIOPS
    score: float
    valid: bool
    source: str

    def phase(self, name: str) -> Io500Phase | None:
        return next((phase for phase in self.phases if phase.name == name), None)


@dataclass(frozen=True)
class Io500Log:
    """``result.txt``: each section's pairs and its ``ERROR INVALID`` reasons."""

    pairs: dict[str, dict[str, str]] = field(default_factory=dict)
    reasons: dict[str, tuple[str, ...]] = field(default_factory=dict)


def parse_io500_summary(text: str, source: str) -> Io500Result:
    """The summary lines (of ``result_summary.txt`` or the binary's stdout,
    whose other lines are skipped)."""
    version = mode = None
    phases: list[Io500Phase] = []
    for number, line in enumerate(text.splitlines(), 1):
        if found := _VERSION.match(line):
            version, mode = found.group(1) or UNKNOWN_VERSION, found.group(2)
        elif found := _PHASE.match(line):
            kind, name, value, unit, time_s, invalid = found.groups()
            phases.append(Io500Phase(name, float(value), unit, float(time_s),
                                     kind == "RESULT", invalid is None))  # fmt: skip
        elif found := _SCORE.match(line):
            bandwidth, metadata, score, invalid = found.groups()
            if version is None or mode is None:
                raise DataFormatError(source, f"line {number}", "no 'IO500 version' line before")
            return Io500Result(version, mode, tuple(phases), float(bandwidth), float(metadata),
                               float(score), invalid is None, source)  # fmt: skip
    where = f"line {len(text.splitlines())}"
    raise DataFormatError(source, where, "io500 output ends before its '[SCORE ]' line")


def parse_io500_log(text: str) -> Io500Log:
    """``result.txt``'s sections; lines before the first section are left out."""
    log = Io500Log()
    section: str | None = None
    for line in text.splitlines():
        if found := _SECTION.match(line):
            section = found.group(1)
            log.pairs.setdefault(section, {})
        elif section is None:
            continue
        elif found := _INVALID.match(line):
            log.reasons[section] = (*log.reasons.get(section, ()), found.group(1).strip())
        elif found := _PAIR.match(line):
            log.pairs[section][found.group(1)] = found.group(2).strip()
    return log


def load_io500_results(directory: Path) -> tuple[Io500Result, Io500Log]:
    """The summary and the log of an io500 result directory (the log may be absent)."""
    summary = directory / SUMMARY_NAME
    if not summary.is_file():
        raise DataFormatError(summary, "file", "no io500 result summary: the run did not finish")
    result = parse_io500_summary(read_tool_output(summary), str(summary))
    log_path = directory / LOG_NAME
    log = parse_io500_log(read_tool_output(log_path)) if log_path.is_file() else Io500Log()
    return result, log
