"""Ratios of paired rounds: one side's round i over the other's round i.

On a disk whose speed drifts (a virtio disk partly served from the host's
cache, a shared machine), two rounds run back to back meet the same drift;
two medians taken over different moments do not. So a comparison is the
median of the per-round ratios, shown with their spread.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PairedRatios:
    """``numerator[i] / denominator[i]`` for every round i, and their summary."""

    ratios: tuple[float, ...]

    @classmethod
    def of(cls, numerator: Sequence[float], denominator: Sequence[float]) -> PairedRatios:
        if len(numerator) != len(denominator):
            raise ValueError(
                f"paired rounds need as many of each side, got {len(numerator)} "
                f"and {len(denominator)}"
            )
        pairs = zip(numerator, denominator, strict=True)
        return cls(tuple(n / d if d > 0 else 0.0 for n, d in pairs))

    @property
    def rounds(self) -> int:
        return len(self.ratios)

    @property
    def median(self) -> float:
        return statistics.median(self.ratios) if self.ratios else 0.0

    @property
    def low(self) -> float:
        return min(self.ratios, default=0.0)

    @property
    def high(self) -> float:
        return max(self.ratios, default=0.0)

    @property
    def quartiles(self) -> tuple[float, float]:
        """First and third quartile (inclusive method: within the observed range)."""
        if len(self.ratios) < 2:
            return (self.median, self.median)
        q1, _, q3 = statistics.quantiles(self.ratios, n=4, method="inclusive")
        return (q1, q3)

    def to_json(self) -> dict[str, Any]:
        q1, q3 = self.quartiles
        return {
            "rounds": self.rounds,
            "median": round(self.median, 3),
            "min": round(self.low, 3),
            "max": round(self.high, 3),
            "q1": round(q1, 3),
            "q3": round(q3, 3),
            "per_round": [round(ratio, 3) for ratio in self.ratios],
        }
