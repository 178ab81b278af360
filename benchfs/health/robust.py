"""Robust outliers across nodes: median and MAD on a log scale.

Storage figures vary by factors, not by offsets, so distances are taken
between logarithms: a node at half the median bandwidth is as far out as a
node at twice the median latency. A node is an outlier for a metric only
when it is far out in robust z (|log x - median| / (1.4826 MAD)) AND at least
a given factor away from the median, in the direction that is bad for that
metric; the factor guards against a tiny MAD among near-identical nodes.
Each node is measured against the others, not against a median and MAD that
include its own value. With only two or three other nodes the MAD says
little, so a node worse than every other node by the factor squared (4x by
default) is an outlier too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from analysis.figures import figure

Bad = Literal["low", "high"]
_MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution times this is its standard deviation


@dataclass(frozen=True)
class Outlier:
    node: str
    metric: str
    value: float
    median: float
    factor: float  # value / median
    robust_z: float
    bad: Bad

    @property
    def times_worse(self) -> float:
        """How many times worse than the median, in the bad direction (>= 1)."""
        if self.bad == "high":
            return self.factor
        return 1 / self.factor if self.factor > 0 else math.inf

    def describe(self) -> str:
        if self.bad == "high":
            how = f"{self.factor:,.1f}x the median"
        elif self.factor > 0:
            how = f"{1 / self.factor:,.1f}x lower than the median"
        else:
            how = "zero, against a median"
        return (
            f"{self.metric} = {figure(self.value)} on {self.node} is {how} of the other nodes "
            f"({figure(self.median)}; robust z {figure(self.robust_z)})"
        )


def robust_outliers(
    values: Mapping[str, float],
    metric: str,
    bad: Bad,
    *,
    z_limit: float,
    min_relative: float,
) -> list[Outlier]:
    """Nodes whose value of ``metric`` is far out on the bad side (needs >= 3 nodes).

    Each node is compared with the OTHER nodes (their median and MAD): with few
    nodes, a sick node's own value would otherwise widen the MAD it is judged by.
    """
    usable = {node: value for node, value in values.items() if math.isfinite(value) and value > 0}
    if len(values) < 3 or len(usable) < 2:
        return []
    logs = {node: math.log10(value) for node, value in usable.items()}
    low_factor = 1 - min_relative
    found: list[Outlier] = []
    for node, value in values.items():
        others = [log for other, log in logs.items() if other != node]
        if len(others) < 2:
            continue
        center = float(np.median(others))
        mad = float(np.median([abs(log - center) for log in others]))
        median = 10**center
        if value == 0 and bad == "low":
            found.append(Outlier(node, metric, 0.0, median, 0.0, math.inf, bad))
            continue
        if node not in logs:
            continue
        distance = logs[node] - center
        z = abs(distance) / (_MAD_TO_SIGMA * mad) if mad > 0 else math.inf if distance else 0.0
        factor = value / median
        far = (factor <= low_factor) if bad == "low" else (factor * low_factor >= 1)
        # Two or three other nodes give a MAD that says little (one starved healthy node
        # widens it): there, being worse than EVERY other node by the factor squared counts too.
        nearest = min(others) if bad == "low" else max(others)
        apart = (nearest - logs[node]) if bad == "low" else (logs[node] - nearest)
        clearly_apart = len(others) <= 3 and apart >= 2 * math.log10(1 / low_factor)
        if far and (z > z_limit or clearly_apart):
            found.append(Outlier(node, metric, value, median, factor, z, bad))
    return found
