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

``validity`` judges a result by the reference's rules (``src/main.c``,
``phase_ior.c``, ``phase_find.c``, ``phase_dbg.c``): which phases it would
mark ``[INVALID]`` and why, and whether the score is valid.
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


# The reference's validity rules (its src/main.c, phase_ior.c, phase_find.c,
# phase_dbg.c). A write phase runs at least this long (opt.minwrite, 300 s;
# 30 s in its student-cluster mode), and its stonewall-time must be that.
MIN_WRITE_S = 300.0
# The phases the reference checks against the stonewall (verify_stonewall).
STONEWALLED_PHASES = ("ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write")
# The suite that is a short test run by definition (benchfs.config.suite).
QUICK_SUITE = "io500-quick"


@dataclass(frozen=True)
class Validity:
    """Whether a suite's result is a valid IO500 result, and why not: the
    run's own reasons and each phase's (as the reference's ``ERROR
    INVALID`` lines; a phase with reasons is ``[INVALID]``, and so is the
    score)."""

    run_reasons: tuple[str, ...]
    phase_reasons: dict[str, tuple[str, ...]]

    @property
    def valid(self) -> bool:
        return not self.reasons

    @property
    def reasons(self) -> tuple[str, ...]:
        """Every reason: the run's, then each invalid phase's, named."""
        phases = tuple(
            f"{phase}: {reason}"
            for phase, reasons in self.phase_reasons.items()
            for reason in reasons
        )
        return self.run_reasons + phases


def phase_time_s(row: Mapping[str, Any]) -> float | None:
    """A phase row's time: mdtest's (metadata) or IOR's (data)."""
    value = row.get("time_mean_s") if row.get("kind") == "metadata" else row.get("MeanTime")
    return None if value is None else float(value)


def phase_invalid_reasons(row: Mapping[str, Any], stonewall_s: float) -> tuple[str, ...]:
    """Why the reference would mark one phase ``[INVALID]`` (empty: valid)."""
    phase = str(row["phase"])
    reasons: list[str] = []
    errors = int(row.get("errors") or 0)
    verify_errors = int(row.get("verify_errors") or 0)
    if errors:
        reasons.append(f"{errors} errors during the phase")
    if verify_errors:
        reasons.append(f"{verify_errors} verification errors: data read was not what was written")
    time_s = phase_time_s(row)
    figure = phase_figure(row)
    if phase in STONEWALLED_PHASES and time_s is not None:
        if time_s < stonewall_s:
            reasons.append(f"ran {time_s:.3f} s, less than its stonewall of {stonewall_s:g} s")
        if time_s < MIN_WRITE_S:
            reasons.append(
                f"ran {time_s:.3f} s, less than the {MIN_WRITE_S:g} s a write phase must"
            )
    if figure <= 0:
        reasons.append("its result is 0")
    if phase == "find" and row.get("found") is not None and int(row["found"]) == 0:
        reasons.append("find found no file matching its criteria")
    return tuple(reasons)


def validity(rows: Sequence[Mapping[str, Any]], suite: Mapping[str, Any]) -> Validity:
    """The validity of a suite's result from its phase rows and its ``suite``
    record (``name``, ``stonewall_s``), as the reference applies its rules."""
    stonewall_s = float(suite.get("stonewall_s") or 0.0)
    run_reasons: list[str] = []
    if suite.get("name") == QUICK_SUITE:
        run_reasons.append(
            f"{QUICK_SUITE} is a short test run with small sizes: never a valid IO500 result"
        )
    if stonewall_s != MIN_WRITE_S:
        run_reasons.append(
            f"stonewall {stonewall_s:g} s: IO500 requires its stonewall-time of {MIN_WRITE_S:g} s"
        )
    by_phase = {str(row.get("phase")): row for row in rows}
    missing = [phase for phase in PHASE_NAMES if phase not in by_phase]
    if missing:
        run_reasons.append(f"phases not run: {', '.join(missing)}")
    phase_reasons = {
        phase: phase_invalid_reasons(by_phase[phase], stonewall_s)
        for phase in PHASE_NAMES
        if phase in by_phase
    }
    return Validity(tuple(run_reasons), {k: v for k, v in phase_reasons.items() if v})


def with_validity(
    rows: Sequence[Mapping[str, Any]], suite: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The phase rows with their ``valid`` and ``invalid_reasons``, and the
    document's ``valid`` and ``invalid_reasons`` (every reason, the phases' named)."""
    found = validity(rows, suite)
    marked = []
    for row in rows:
        reasons = found.phase_reasons.get(str(row.get("phase")), ())
        marked.append({**row, "valid": not reasons, "invalid_reasons": list(reasons)})
    return marked, {"valid": found.valid, "invalid_reasons": list(found.reasons)}
