"""The IO500 suite's phases and its score, as the reference implementation
(github.com/IO500/io500, ``src/main.c`` ``calc_score``) computes them.

Each phase has one figure: an IOR phase its bandwidth in GiB/s (all bytes
over the phase's time, 2^30 bytes a GiB), an mdtest phase its rate in
kIOPS (items over the phase's time, / 1000), find the entries it scanned
over its time in kIOPS. ``bandwidth`` is the geometric mean of the IOR
phases, ``metadata`` that of the mdtest phases and find, and the score
``sqrt(bandwidth * metadata)``. As the reference does, a phase whose figure
is not above 0 (not run) is left out of its mean, and a group without any
phase counts 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Group = Literal["bandwidth", "metadata"]
GIB = float(1 << 30)

# The scored phases in the order the reference runs them (its
# phase-definitions.h, optional phases left out); the timestamp that find's
# newer-than criterion compares with is taken after mdtest-easy-write.
PHASES: tuple[tuple[str, Group], ...] = (
    ("ior-easy-write", "bandwidth"),
    ("mdtest-easy-write", "metadata"),
    ("ior-hard-write", "bandwidth"),
    ("mdtest-hard-write", "metadata"),
    ("find", "metadata"),
    ("ior-easy-read", "bandwidth"),
    ("mdtest-easy-stat", "metadata"),
    ("ior-hard-read", "bandwidth"),
    ("mdtest-hard-stat", "metadata"),
    ("mdtest-easy-delete", "metadata"),
    ("mdtest-hard-read", "metadata"),
    ("mdtest-hard-delete", "metadata"),
)
PHASE_NAMES: tuple[str, ...] = tuple(name for name, _ in PHASES)
GROUPS: dict[str, Group] = dict(PHASES)
UNITS: dict[Group, str] = {"bandwidth": "GiB/s", "metadata": "kIOPS"}
# The metadata phases: (mdtest's object, operation); find scans the namespace.
METADATA_OPERATIONS: dict[str, tuple[str, str]] = {
    "mdtest-easy-write": ("file", "create"),
    "mdtest-hard-write": ("file", "create"),
    "find": ("namespace", "find"),
    "mdtest-easy-stat": ("file", "stat"),
    "mdtest-hard-stat": ("file", "stat"),
    "mdtest-easy-delete": ("file", "remove"),
    "mdtest-hard-read": ("file", "read"),
    "mdtest-hard-delete": ("file", "remove"),
}


@dataclass(frozen=True)
class Score:
    """The suite's score and its two groups."""

    bandwidth: float  # GiB/s
    metadata: float  # kIOPS
    score: float

    def to_json(self) -> dict[str, float]:
        return {"score": self.score, "bandwidth": self.bandwidth, "metadata": self.metadata}


def _geometric_mean(values: list[float]) -> float:
    kept = [value for value in values if value > 0]
    if not kept:
        return 0.0
    return math.exp(sum(math.log(value) for value in kept) / len(kept))


def score(figures: Mapping[str, float]) -> Score:
    """The score of the phases' figures (GiB/s or kIOPS, by IO500 phase name)."""
    unknown = sorted(set(figures) - set(GROUPS))
    if unknown:
        raise ValueError(f"not IO500 phases: {', '.join(unknown)}")
    bandwidth = _geometric_mean([v for k, v in figures.items() if GROUPS[k] == "bandwidth"])
    metadata = _geometric_mean([v for k, v in figures.items() if GROUPS[k] == "metadata"])
    return Score(bandwidth, metadata, math.sqrt(bandwidth * metadata))


def phase_figure(row: Mapping[str, Any]) -> float:
    """One summary phase row's IO500 figure: GiB/s of a data phase (IOR's
    mean bandwidth in MiB/s / 1024), kIOPS of a metadata phase."""
    if row.get("kind") == "metadata":
        rate = row.get("rate_mean_ops_s")
        return float(rate) / 1000.0 if rate is not None else 0.0
    bandwidth = row.get("bwMeanMIB")
    return float(bandwidth) / 1024.0 if bandwidth is not None else 0.0


def score_of_rows(rows: Sequence[Mapping[str, Any]]) -> Score:
    """The score of a summary's phase rows (those named as IO500's phases)."""
    return score({str(r["phase"]): phase_figure(r) for r in rows if r.get("phase") in GROUPS})
