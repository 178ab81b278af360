"""Tell which tool wrote a file, by its content (and, for mdtest's per-op files, its name).

Each tool prints a line no other output has: IOR its banner or JSON's first
key, mdtest its launch line, the CSV files their header, fio its JSON's
first key or a terse line (``3;fio-3.33;job;...``). Names are not trusted:
an IOR JSON summary is often saved as ``.txt`` or ``.stdout``.
"""

from __future__ import annotations

import re
from enum import StrEnum

from analysis.loaders.fio_terse import TERSE_LINE


class ToolOutput(StrEnum):
    """The output families the loaders read."""

    IOR_JSON = "IOR JSON"
    IOR_TEXT = "IOR text"
    IOR_CSV = "IOR CSV"
    MDTEST_TEXT = "mdtest text"
    MDTEST_RANK_DETAILS = "mdtest rank-details CSV"
    MDTEST_PER_OP = "mdtest per-op CSV"
    FIO_JSON = "fio JSON"
    FIO_TERSE = "fio terse"

    @property
    def tool(self) -> str:
        return self.value.split()[0].lower()


IOR_BANNER = re.compile(r"^IOR-(\S+): MPI Coordinated Test of Parallel I/O", re.MULTILINE)
IOR_JSON_START = re.compile(r'^[ \t]*\{\s*"Version"\s*:', re.MULTILINE)
IOR_CSV_HEADER = (
    "access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),open(s),wr/rd(s),close(s),total(s)"
)
IOR_CSV_LINE = re.compile(r"^" + re.escape(IOR_CSV_HEADER) + r"(?=,|$)", re.MULTILINE)
MDTEST_LAUNCHED = re.compile(
    r"^mdtest-(\S+) was launched with (\d+) total task\(s\) on (\d+) node\(s\)", re.MULTILINE
)
MDTEST_RANK_DETAILS_HEADER = "rank,items,rate-"
MDTEST_PER_OP_HEADER = "time,runtime,tp"
FIO_JSON_START = re.compile(r'^[ \t]*\{\s*"fio version"\s*:', re.MULTILINE)


def detect(text: str) -> ToolOutput | None:
    """The output family of ``text``, or None if no loader reads it."""
    first_line = text.lstrip("\ufeff").split("\n", 1)[0].strip()
    if first_line.startswith(MDTEST_RANK_DETAILS_HEADER):
        return ToolOutput.MDTEST_RANK_DETAILS
    if first_line == MDTEST_PER_OP_HEADER:
        return ToolOutput.MDTEST_PER_OP
    if MDTEST_LAUNCHED.search(text):
        return ToolOutput.MDTEST_TEXT
    if IOR_BANNER.search(text):
        return ToolOutput.IOR_TEXT
    if IOR_JSON_START.search(text) and '"tests"' in text:
        return ToolOutput.IOR_JSON
    if IOR_CSV_LINE.search(text):
        return ToolOutput.IOR_CSV
    if FIO_JSON_START.search(text):
        return ToolOutput.FIO_JSON
    if TERSE_LINE.search(text):
        return ToolOutput.FIO_TERSE
    return None


def looks_like(text: str) -> str:
    """A phrase for error messages: what the text seems to be instead."""
    kind = detect(text)
    return f"it looks like {kind.value} output" if kind else "no tool's output was recognized"
