"""Paired rounds: one side's round i against the other's round i.

On a disk whose speed drifts (a virtio disk partly served from the host's
cache, a shared machine), two rounds run back to back meet the same drift;
two medians taken over different moments do not. So a comparison is the
median of the per-round ratios (or differences), shown with their spread.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


def _pairs(first: Sequence[float], second: Sequence[float]) -> zip[tuple[float, float]]:
    if len(first) != len(second):
        raise ValueError(
            f"paired rounds need as many of each side, got {len(first)} and {len(second)}"
        )
    return zip(first, second, strict=True)


@dataclass(frozen=True)
class Paired:
    """One figure per round comparing the two sides, and their summary."""

    values: tuple[float, ...]

    # Decimal places in JSON: ratios near 1 need three, microseconds one.
    digits = 3

    @property
    def rounds(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else 0.0

    @property
    def low(self) -> float:
        return min(self.values, default=0.0)

    @property
    def high(self) -> float:
        return max(self.values, default=0.0)

    @property
    def quartiles(self) -> tuple[float, float]:
        """First and third quartile (inclusive method: within the observed range)."""
        if len(self.values) < 2:
            return (self.median, self.median)
        q1, _, q3 = statistics.quantiles(self.values, n=4, method="inclusive")
        return (q1, q3)

    def count(self, meets: Callable[[float], bool]) -> int:
        """How many rounds' figures satisfy ``meets`` (a predicate on one figure)."""
        return sum(1 for value in self.values if meets(value))

    def to_json(self) -> dict[str, Any]:
        q1, q3 = self.quartiles
        digits = self.digits
        return {
            "rounds": self.rounds,
            "median": round(self.median, digits),
            "min": round(self.low, digits),
            "max": round(self.high, digits),
            "q1": round(q1, digits),
            "q3": round(q3, digits),
            "per_round": [round(value, digits) for value in self.values],
        }


@dataclass(frozen=True)
class PairedRatios(Paired):
    """``numerator[i] / denominator[i]`` for every round i."""

    @classmethod
    def of(cls, numerator: Sequence[float], denominator: Sequence[float]) -> PairedRatios:
        return cls(tuple(n / d if d > 0 else 0.0 for n, d in _pairs(numerator, denominator)))

    @property
    def ratios(self) -> tuple[float, ...]:
        return self.values


@dataclass(frozen=True)
class PairedDifferences(Paired):
    """``minuend[i] - subtrahend[i]`` for every round i (latencies in us)."""

    digits = 1

    @classmethod
    def of(cls, minuend: Sequence[float], subtrahend: Sequence[float]) -> PairedDifferences:
        return cls(tuple(m - s for m, s in _pairs(minuend, subtrahend)))
