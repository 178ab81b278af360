"""The phase rows of ``workload/summary.json``: what every producer writes.

A phase row is either a data phase (IOR's summary names: ``bwMaxMIB`` ...
``xsizeMiB``) or a metadata phase (mdtest's phase names and its rates over
repetitions, ``MetadataPhase`` below). Every row says which tool produced it
and, where known, the transfers in flight per rank and the access pattern,
so that like is compared with like (docs/RUN.md).

Both sides use this module: the loaders that convert IOR, mdtest and fio
output, and the native workloads that write the summary themselves.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from analysis.io500 import METADATA_OPERATIONS as IO500_METADATA_PHASES

# Columns of a data phase row that describe the test rather than measure it.
DATA_SKIP = frozenset({"TestID", "ReferenceNumber", "segmentCount", "blockSize", "transferSize",
                       "numTasks", "tasksPerNode", "repetitions", "filePerProc", "reorderTasks",
                       "taskPerNodeOffset", "reorderTasksRandom", "reorderTasksRandomSeed",
                       "OPsMax", "OPsMin", "OPsSD", "xsizeMiB"})  # fmt: skip

# io500: a phase the reference's io500 binary ran itself (its find).
Tool = Literal["ior", "mdtest", "fio", "benchfs", "io500"]
Kind = Literal["data", "metadata"]
TOOLS: tuple[str, ...] = ("ior", "mdtest", "fio", "benchfs", "io500")
KINDS: tuple[str, ...] = ("data", "metadata")

# The fields every phase row carries besides its figures.
PROVENANCE_FIELDS = ("kind", "tool", "tool_version", "queue_depth", "access", "ordering")

# mdtest's phases in the order it runs and prints them: name -> (object, operation).
# "Directory read" appears only in --saveRankPerformanceDetails files.
MDTEST_PHASES: dict[str, tuple[str, str]] = {
    "Directory creation": ("directory", "create"),
    "Directory stat": ("directory", "stat"),
    "Directory read": ("directory", "read"),
    "Directory rename": ("directory", "rename"),
    "Directory removal": ("directory", "remove"),
    "File creation": ("file", "create"),
    "File stat": ("file", "stat"),
    "File read": ("file", "read"),
    "File removal": ("file", "remove"),
    "Tree creation": ("tree", "create"),
    "Tree removal": ("tree", "remove"),
}

# A metadata row is named as mdtest names its phases, or (the IO500 suite) as
# IO500 names its metadata phases: "mdtest-easy-write", "find", ...
_OPERATIONS: dict[str, tuple[str, str]] = {**MDTEST_PHASES, **IO500_METADATA_PHASES}
# Qualifiers after a phase name: "File creation (4 tasks)", "write (run.txt)".
_QUALIFIER = re.compile(r"(?:\s+\([^()]*\))+$")
# Access patterns of metadata phases (mdtest -u, or one directory for all ranks).
UNIQUE_DIR = "unique-dir-per-rank"
SHARED_DIR = "shared-dir"
PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50_us", 50.0),
    ("p90_us", 90.0),
    ("p99_us", 99.0),
    ("p99.9_us", 99.9),
)
LATENCY_KEYS = ("min_us", "mean_us", *(key for key, _ in PERCENTILES), "max_us")


@dataclass(frozen=True)
class Provenance:
    """Which tool produced a phase, and what it compares like with like by."""

    tool: str
    tool_version: str = ""
    kind: str = "data"
    queue_depth: int | None = None  # transfers (or operations) in flight per rank
    access: str | None = None  # file-per-process, single-shared-file, unique-dir-per-rank, ...
    ordering: str | None = None  # sequential or random, within a file

    def __post_init__(self) -> None:
        if self.tool not in TOOLS:
            raise ValueError(f"tool {self.tool!r} is not one of {', '.join(TOOLS)}")
        if self.kind not in KINDS:
            raise ValueError(f"kind {self.kind!r} is not one of {', '.join(KINDS)}")

    def fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in PROVENANCE_FIELDS}


@dataclass(frozen=True)
class LatencyFigures:
    """Per-op latency of a phase in microseconds (nearest-rank percentiles)."""

    ops: int
    min_us: float
    mean_us: float
    p50_us: float
    p90_us: float
    p99_us: float
    p999_us: float
    max_us: float

    def to_row(self) -> dict[str, Any]:
        return {
            "latency_ops": self.ops,
            "min_us": self.min_us,
            "mean_us": self.mean_us,
            "p50_us": self.p50_us,
            "p90_us": self.p90_us,
            "p99_us": self.p99_us,
            "p99.9_us": self.p999_us,
            "max_us": self.max_us,
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> LatencyFigures | None:
        if row.get("latency_ops") in (None, 0) or _missing(row.get("p50_us")):
            return None
        return cls(
            ops=int(row["latency_ops"]),
            min_us=float(row["min_us"]),
            mean_us=float(row["mean_us"]),
            p50_us=float(row["p50_us"]),
            p90_us=float(row["p90_us"]),
            p99_us=float(row["p99_us"]),
            p999_us=float(row["p99.9_us"]),
            max_us=float(row["max_us"]),
        )


def nearest_rank(ordered: Sequence[float] | npt.NDArray[np.float64], percent: float) -> float:
    """The smallest of the sorted ``ordered`` with at least ``percent`` % of them at or
    below it (the nearest-rank percentile, as IOR and mdtest report latencies)."""
    # rounded first, so 99.9 % of 1000 is rank 999 and not 1000 by float error
    # (numpy's "inverted_cdf" method takes rank 1000 there)
    return float(ordered[max(1, math.ceil(round(percent * len(ordered) / 100.0, 6))) - 1])


def latency_figures(
    values_us: Sequence[float] | npt.NDArray[np.float64],
) -> LatencyFigures | None:
    """min, mean, nearest-rank p50/p90/p99/p99.9 and max of per-op latencies (us)."""
    ordered = np.sort(np.asarray(values_us, dtype=np.float64))
    if ordered.size == 0:
        return None
    return LatencyFigures(
        ops=int(ordered.size),
        min_us=float(ordered[0]),
        mean_us=float(ordered.mean()),
        p50_us=nearest_rank(ordered, 50.0),
        p90_us=nearest_rank(ordered, 90.0),
        p99_us=nearest_rank(ordered, 99.0),
        p999_us=nearest_rank(ordered, 99.9),
        max_us=float(ordered[-1]),
    )


@dataclass(frozen=True)
class MetadataPhase:
    """One metadata phase (mdtest semantics) over its repetitions.

    Rates are operations per second of all ranks together in a repetition
    (mdtest: items of all ranks / the slowest rank's time), then max, min,
    mean and standard deviation over the repetitions as mdtest prints them
    (sample standard deviation, 0 for one repetition). Times are the
    phase's seconds per repetition (mdtest ``-P``/``-Z``); the ``rank_rate``
    figures are per rank (mdtest ``--showRankStatistics``).
    """

    phase: str  # mdtest's name: "File creation", "Directory stat", ...
    tool: str
    tool_version: str = ""
    tasks: int | None = None
    repetitions: int | None = None
    items: float | None = None  # per repetition, all ranks
    items_per_rank: int | None = None
    rate_max_ops_s: float | None = None
    rate_min_ops_s: float | None = None
    rate_mean_ops_s: float | None = None
    rate_stddev_ops_s: float | None = None
    time_max_s: float | None = None
    time_min_s: float | None = None
    time_mean_s: float | None = None
    time_stddev_s: float | None = None
    rank_rate_max_ops_s: float | None = None
    rank_rate_min_ops_s: float | None = None
    rank_rate_mean_ops_s: float | None = None
    queue_depth: int | None = 1
    access: str | None = None  # unique-dir-per-rank or shared-dir
    write_bytes: int | None = None  # per file, after create
    read_bytes: int | None = None  # per file, in the read phase
    stonewall_s: float | None = None
    stonewalled: bool = False
    stonewall_items_min: int | None = None  # per rank, when the stonewall hit
    stonewall_items_max: int | None = None
    latency: LatencyFigures | None = None
    source: str | None = None  # the file it was read from
    # Why the target could not run the phase (no figures then), e.g. a
    # directory rename on BenchFS; None: it ran.
    unsupported: str | None = None

    def __post_init__(self) -> None:
        if self.mdtest_name not in _OPERATIONS:
            raise ValueError(
                f"metadata phase {self.phase!r} is not one of mdtest's: {', '.join(MDTEST_PHASES)}"
                " (optionally followed by a qualifier in parentheses), nor one of IO500's"
            )
        Provenance(self.tool, kind="metadata")  # validates the tool

    @property
    def mdtest_name(self) -> str:
        """The phase's mdtest name, without qualifiers such as ``(4 tasks)``."""
        return _QUALIFIER.sub("", self.phase)

    @property
    def object(self) -> str:
        return _OPERATIONS[self.mdtest_name][0]

    @property
    def operation(self) -> str:
        return _OPERATIONS[self.mdtest_name][1]

    def provenance(self) -> Provenance:
        return Provenance(
            tool=self.tool,
            tool_version=self.tool_version,
            kind="metadata",
            queue_depth=self.queue_depth,
            access=self.access,
            ordering=None,
        )

    def to_row(self) -> dict[str, Any]:
        """The row as written to ``workload/summary.json``."""
        row: dict[str, Any] = {"phase": self.phase, **self.provenance().fields()}
        row["object"], row["operation"] = self.object, self.operation
        for item in fields(self):
            if item.name not in row and item.name != "latency":
                row[item.name] = getattr(self, item.name)
        row.update(
            self.latency.to_row()
            if self.latency
            else {"latency_ops": None, **dict.fromkeys(LATENCY_KEYS)}
        )
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> MetadataPhase:
        """Read a row back; unknown keys are left alone, missing ones are None."""
        if row.get("kind") != "metadata":
            raise ValueError(
                f"phase {row.get('phase')!r}: kind is {row.get('kind')!r}, not metadata"
            )
        values: dict[str, Any] = {}
        for item in fields(cls):
            if item.name == "latency" or item.name not in row:
                continue
            value = row[item.name]
            values[item.name] = None if _missing(value) else value
        values["stonewalled"] = bool(values.get("stonewalled") or False)
        values["latency"] = LatencyFigures.from_row(row)
        return cls(**values)


def is_metadata_row(row: Mapping[str, Any]) -> bool:
    return row.get("kind") == "metadata"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
