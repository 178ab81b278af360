"""Parse mdtest's text output.

What mdtest prints (rank 0, on stdout): ``-- started at ... --``, ``mdtest-<version>
was launched with N total task(s) on M node(s)``, ``Command line used: ...``
(arguments quoted), ``N tasks, M files/directories`` before each test (one
per task count with ``-f/-l/-s``), ``Continue stonewall hit min: A max: B avg:
C`` when ``-W`` stopped a create phase, then ``SUMMARY rate (in ops/sec): (of
I iterations)`` and, with ``-P`` or ``-Z``, ``SUMMARY time (in ms/op)``: one
row per phase with Max, Min, Mean and Std Dev over the iterations, preceded
by per-rank Max, Min and Mean with ``--showRankStatistics``. Despite its
title, the time block holds each phase's time in seconds (the slowest
rank's). ``-v`` adds ``V-1:`` lines with each iteration's figures.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.errors import DataFormatError
from analysis.loaders._tooltext import describe_end, failure, read_tool_output
from analysis.loaders.detect import MDTEST_LAUNCHED, looks_like
from analysis.phases import MDTEST_PHASES

_COMMAND = re.compile(r"^Command line used: (.*)$")
_TASKS = re.compile(r"^(\d+) tasks, (?:(\d+) (files/directories|files|directories)|1 file)\s*$")
_SUMMARY = re.compile(r"^SUMMARY (rate|time) \(in [^)]*\): \(of (\d+) iterations\)")
_STONEWALL = re.compile(r"^Continue stonewall hit min: (\d+) max: (\d+) avg: ([\d.]+)")
_STARTED = re.compile(r"^-- started at (.*) --$")
_FINISHED = re.compile(r"^-- finished at (.*) --$")
_ITERATION = re.compile(r"main: \* iteration (\d+) \*")
_PHASE_NAMES = "|".join(re.escape(name) for name in MDTEST_PHASES)
_VERBOSE_FIGURES = re.compile(
    rf"({_PHASE_NAMES})\s*:\s*([\d.]+|inf|nan|-nan) sec,\s*([\d.]+|inf|nan|-nan) ops/sec"
)
_PATH = re.compile(r"^Path\s*: (.*)$")
# mdtest's options that take a value (all others are flags).
_VALUE_OPTIONS = frozenset("abdBefGiIlnNpsVwWxz")
STATISTICS = ("max", "min", "mean", "stddev")
RANK_STATISTICS = ("rank_max", "rank_min", "rank_mean")


@dataclass(frozen=True)
class MdtestTest:
    """One test of an mdtest run (one task count): its summary tables."""

    tasks: int
    items: int | None  # per kind (files, directories) over all ranks, as mdtest announces
    item_kind: str  # "files", "directories", "files/directories" or "1 file"
    iterations: int
    rates: pd.DataFrame | None  # phase, max, min, mean, stddev[, rank_max, rank_min, rank_mean]
    times: pd.DataFrame | None  # the same columns in seconds, with -P or -Z
    stonewall: tuple[tuple[int, int, float], ...] = ()  # (min, max, avg) items per rank
    line: int = 0  # where the test's "N tasks" line is


@dataclass(frozen=True)
class MdtestReport:
    """One mdtest run."""

    source: str
    version: str
    command_line: str
    arguments: dict[str, Any]
    launched_tasks: int
    nodes: int
    path: str
    started: str
    finished: str
    tests: tuple[MdtestTest, ...]
    iterations: pd.DataFrame | None = None  # -v: iteration, phase, time_s, rate_ops_s
    warnings: tuple[str, ...] = field(default_factory=tuple)


def load_mdtest_text(path: Path) -> MdtestReport:
    return parse_mdtest_text(read_tool_output(path), str(path))


def parse_mdtest_text(text: str, source: str) -> MdtestReport:
    """Parse mdtest's output; a missing or cut summary is an error naming the line."""
    launched = MDTEST_LAUNCHED.search(text)
    if launched is None:
        raise DataFormatError(
            source,
            "line 1",
            f"not mdtest output (no 'mdtest-<version> was launched with' line): {looks_like(text)}",
        )
    parser = _Parser(source)
    for number, line in enumerate(text.splitlines(), start=1):
        parser.feed(number, line)
    tests = parser.finish()
    if not tests:
        found = failure(text)
        if found is not None:
            raise DataFormatError(source, f"line {found[0]}", f"the mdtest run failed: {found[1]}")
        raise DataFormatError(
            source, describe_end(text), "mdtest output ends before its SUMMARY (truncated output?)"
        )
    arguments = parse_mdtest_arguments(parser.command)
    _check_complete(tests[-1], arguments, parser, text, source)
    return MdtestReport(
        source=source,
        version=launched[1],
        command_line=" ".join(parser.command),
        arguments=arguments,
        launched_tasks=int(launched[2]),
        nodes=int(launched[3]),
        path=parser.path,
        started=parser.started,
        finished=parser.finished,
        tests=tuple(tests),
        iterations=pd.DataFrame(parser.verbose_rows) if parser.verbose_rows else None,
        warnings=tuple(parser.warnings),
    )


def parse_mdtest_arguments(argv: list[str]) -> dict[str, Any]:
    """mdtest's options as given: ``{"n": "200", "F": 1, "savePerOpDataCSV": "x"}``.

    Single-letter options that take a value accept ``-n 200`` and ``-n=200``;
    long options ``--name=value`` (``True`` without a value); flags count how
    often they were given (``-v -v`` is 2).
    """
    options: dict[str, Any] = {}
    index = 1 if argv and not argv[0].startswith("-") else 0  # skip the program
    while index < len(argv):
        token = argv[index]
        index += 1
        if token.startswith("--"):
            name, _, value = token[2:].partition("=")
            options[name] = value if value else True
        elif token.startswith("-") and len(token) >= 2:
            letter, rest = token[1], token[2:].removeprefix("=")
            if letter in _VALUE_OPTIONS:
                if not rest and index < len(argv):
                    rest, index = argv[index], index + 1
                options[letter] = rest
            else:
                for flag in token[1:]:
                    previous = options.get(flag)
                    options[flag] = previous + 1 if isinstance(previous, int) and previous else 1
    return options


def expected_phases(arguments: dict[str, Any]) -> list[str]:
    """The rows mdtest prints for these options, in its order."""
    files, dirs = "F" in arguments, "D" in arguments
    names = [name for name in MDTEST_PHASES if name != "Directory read"]
    if files and not dirs:
        names = [name for name in names if not name.startswith("Directory")]
    elif dirs and not files:
        names = [name for name in names if not name.startswith("File")]
    return names


class _Parser:
    """A line-by-line reader of mdtest's output."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.command: list[str] = []
        self.path = self.started = self.finished = ""
        self.warnings: list[str] = []
        self.verbose_rows: list[dict[str, Any]] = []
        self.tests: list[MdtestTest] = []
        self.iteration = 0
        self._current: dict[str, Any] | None = None
        self._table: str | None = None

    def feed(self, number: int, line: str) -> None:
        stripped = line.strip()
        if stripped.startswith("V-"):
            self._verbose(stripped)
            return
        if not stripped or set(stripped) <= {"-", " "}:
            return
        for pattern, action in (
            (_STARTED, self._started),
            (_FINISHED, self._finished),
            (_COMMAND, self._command),
            (_PATH, self._path),
            (_TASKS, self._tasks),
            (_STONEWALL, self._stonewall),
            (_SUMMARY, self._summary),
        ):
            if match := pattern.match(stripped):
                action(match, number)
                return
        if self._table is not None and self._current is not None:
            if stripped.startswith(("Operation", "---------")):
                return
            if self._row(stripped, number):
                return
        if stripped.startswith(("WARNING", "ERROR")):  # other lines are informational
            self.warnings.append(stripped)

    def finish(self) -> list[MdtestTest]:
        self._close()
        return self.tests

    def _started(self, match: re.Match[str], number: int) -> None:
        self.started = match[1]

    def _finished(self, match: re.Match[str], number: int) -> None:
        self._close()
        self.finished = match[1]

    def _command(self, match: re.Match[str], number: int) -> None:
        try:
            self.command = shlex.split(match[1])
        except ValueError:  # an unbalanced quote: a cut line
            self.command = match[1].split()

    def _path(self, match: re.Match[str], number: int) -> None:
        self.path = match[1].strip()

    def _tasks(self, match: re.Match[str], number: int) -> None:
        items = int(match[2]) if match[2] else 1
        self._open_test(int(match[1]), items, match[3] or "1 file", number)

    def _open_test(self, tasks: int, items: int | None, kind: str, number: int) -> None:
        self._close()
        self._current = {
            "tasks": tasks,
            "items": items,
            "item_kind": kind,
            "stonewall": [],
            "line": number,
            "tables": {},
            "iterations": 0,
        }

    def _stonewall(self, match: re.Match[str], number: int) -> None:
        if self._current is not None:
            self._current["stonewall"].append((int(match[1]), int(match[2]), float(match[3])))

    def _summary(self, match: re.Match[str], number: int) -> None:
        if self._current is None:  # some mdtest versions print no "N tasks" line
            self._open_test(0, None, "", number)
        assert self._current is not None
        self._table = match[1]
        self._current["iterations"] = int(match[2])
        self._current["tables"][self._table] = []

    def _row(self, stripped: str, number: int) -> bool:
        tokens = stripped.split()
        numbers: list[float] = []
        while tokens and _is_number(tokens[-1]):
            numbers.insert(0, float(tokens.pop()))
        name = " ".join(tokens)
        if not tokens or not numbers:
            return False
        if len(numbers) not in (4, 7):
            raise DataFormatError(
                self.source,
                f"line {number}",
                f"mdtest summary row {name!r} has {len(numbers)} figures where mdtest prints "
                "4 (or 7 with --showRankStatistics) (truncated line?)",
            )
        assert self._current is not None and self._table is not None
        names = STATISTICS if len(numbers) == 4 else (*RANK_STATISTICS, *STATISTICS)
        self._current["tables"][self._table].append(
            {"phase": name, **dict(zip(names, numbers, strict=True)), "line": number}
        )
        return True

    def _verbose(self, stripped: str) -> None:
        if match := _ITERATION.search(stripped):
            self.iteration = int(match[1]) - 1
        elif match := _VERBOSE_FIGURES.search(stripped):
            self.verbose_rows.append(
                {
                    "iteration": self.iteration,
                    "phase": match[1],
                    "time_s": float(match[2]),
                    "rate_ops_s": float(match[3]),
                }
            )

    def _close(self) -> None:
        current, self._current, self._table = self._current, None, None
        if current is None or not current["tables"]:
            return
        tables = current["tables"]
        self.tests.append(
            MdtestTest(
                tasks=current["tasks"],
                items=current["items"],
                item_kind=current["item_kind"],
                iterations=current["iterations"],
                rates=_frame(tables.get("rate")),
                times=_frame(tables.get("time")),
                stonewall=tuple(current["stonewall"]),
                line=current["line"],
            )
        )


def _frame(rows: list[dict[str, Any]] | None) -> pd.DataFrame | None:
    if rows is None:
        return None
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=["phase", *STATISTICS, "line"])


def _check_complete(
    test: MdtestTest, arguments: dict[str, Any], parser: _Parser, text: str, source: str
) -> None:
    """The last test must have every row mdtest prints, unless mdtest said it finished."""
    if parser.finished:
        return
    expected = len(expected_phases(arguments))
    for table in (test.rates, test.times):
        if table is not None and len(table) < expected:
            raise DataFormatError(
                source,
                describe_end(text),
                f"mdtest output ends inside its SUMMARY: {len(table)} of {expected} phase rows "
                "and no '-- finished at' line (truncated output?)",
            )


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True
