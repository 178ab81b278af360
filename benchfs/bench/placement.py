"""Where the host ran the two virtual CPUs during a round.

On a virtual machine a cache line crosses between the two CPUs in either
about 64 ns (near) or 210-290 ns (far), depending on where the host places
them, and that flips every few seconds to minutes. Every shared-memory
round trip follows it, so a round is bracketed by a core-to-core
measurement before and after; a round whose placement changed in between
(the two differ by more than 1.5x) is reported but not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

STEADY_WITHIN = 1.5  # before and after within this factor: the placement held
FAR_FROM_NS = 150.0  # between the two modes seen (~64 ns and 210-290 ns)

PlacementName = Literal["near", "far", "changed"]


@dataclass(frozen=True)
class Placement:
    before_ns: float
    after_ns: float

    @property
    def steady(self) -> bool:
        low, high = sorted((self.before_ns, self.after_ns))
        return high <= STEADY_WITHIN * low

    @property
    def name(self) -> PlacementName:
        if not self.steady:
            return "changed"
        return "far" if min(self.before_ns, self.after_ns) >= FAR_FROM_NS else "near"

    def to_json(self) -> dict[str, Any]:
        return {
            "core_to_core_ns": [round(self.before_ns, 1), round(self.after_ns, 1)],
            "placement": self.name,
            "counted": self.steady,
        }
