"""Which nodes to leave out of a run, on strong evidence only, with every decision recorded.

A node is excluded when, for one metric, it is BOTH a robust outlier among
the nodes (median/MAD, see ``robust``) at least ``outlier_degraded_factor``
times worse than the median AND beyond that metric's absolute limit; either
alone is noise on a busy cluster (a short preflight on a shared disk shows
p99 spikes of a few times the median on healthy nodes; the sick nodes seen
in the field were hundreds of times slower). A node whose preflight could
not run at all is excluded too, unless it could run on none: a failure every
node shares says nothing against one of them (a missing tool, a bad setting),
so each is kept unchecked with its error. Exclusions never leave fewer nodes than
``max(min_nodes, ceil(min_node_fraction * nodes))``; when they would, the
worst offenders go first and the rest are kept with the reason said.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from analysis.figures import figure
from benchfs.health.robust import Bad, Outlier, robust_outliers
from benchfs.health.thresholds import Thresholds


@dataclass(frozen=True)
class PolicyMetric:
    name: str  # key in the per-node values
    bad: Bad
    threshold: str  # Thresholds field holding the absolute limit
    scale: float = 1.0  # metric units per threshold unit


@dataclass(frozen=True)
class Evidence:
    metric: str
    value: float
    median: float
    factor: float
    robust_z: float
    limit: float
    beyond_limit: bool

    def describe(self) -> str:
        side = "below" if self.factor < 1 else "above"
        return (
            f"{self.metric} = {figure(self.value, 4)} ({figure(self.factor, 2)}x the median "
            f"{figure(self.median, 4)}, robust z {figure(self.robust_z)}), {side} the limit "
            f"{figure(self.limit, 4)}"
        )


@dataclass(frozen=True)
class Decision:
    node: str
    excluded: bool
    reason: str
    evidence: tuple[Evidence, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class PolicyResult:
    kept: tuple[str, ...]
    excluded: tuple[str, ...]
    minimum_nodes: int
    decisions: tuple[Decision, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def minimum_nodes(total: int, thresholds: Thresholds) -> int:
    wanted = max(thresholds.min_nodes, math.ceil(thresholds.min_node_fraction * total))
    return min(total, max(1, wanted))


def decide_exclusions(
    values: Mapping[str, Mapping[str, float]],
    metrics: Sequence[PolicyMetric],
    thresholds: Thresholds,
    *,
    errors: Mapping[str, str] | None = None,
) -> PolicyResult:
    """Decide for every node in ``values`` (and every node in ``errors``, which failed)."""
    errors = dict(errors or {})
    nodes = list(dict.fromkeys([*values, *errors]))
    strong: dict[str, list[Evidence]] = {}
    for metric in metrics:
        column = {node: row[metric.name] for node, row in values.items() if metric.name in row}
        outliers = robust_outliers(
            column,
            metric.name,
            metric.bad,
            z_limit=thresholds.outlier_z,
            min_relative=thresholds.outlier_min_relative,
        )
        limit = float(getattr(thresholds, metric.threshold)) * metric.scale
        for outlier in outliers:
            evidence = _evidence(outlier, limit)
            if evidence.beyond_limit and outlier.times_worse >= thresholds.outlier_degraded_factor:
                strong.setdefault(outlier.node, []).append(evidence)
    floor = minimum_nodes(len(nodes), thresholds)
    if len(nodes) > 1 and all(node in errors for node in nodes):
        shared = (
            "kept unchecked: the preflight could not run on any node ({}), "
            "which points at the job, not at this node"
        )
        return PolicyResult(
            kept=tuple(nodes),
            excluded=(),
            minimum_nodes=floor,
            decisions=tuple(
                Decision(node, False, shared.format(errors[node]), (), errors[node])
                for node in nodes
            ),
        )
    # Worst first: failed nodes, then by the largest robust z of their evidence.
    candidates = sorted(
        [node for node in nodes if node in errors or node in strong],
        key=lambda node: (
            node not in errors,
            -max((e.robust_z for e in strong.get(node, [])), default=0),
        ),
    )
    excluded: list[str] = []
    decisions: dict[str, Decision] = {}
    for node in candidates:
        found = tuple(strong.get(node, ()))
        if len(nodes) - len(excluded) - 1 < floor:
            below = f"excluding it would leave fewer than {floor} nodes"
            # A node that could not be measured has not passed: it is kept unchecked, never
            # "despite the evidence" as if the preflight had cleared it.
            reason = (
                f"kept unchecked: its preflight could not run ({errors[node]}); {below}"
                if node in errors
                else f"kept despite the evidence: {below}"
            )
            decisions[node] = Decision(node, False, reason, found, errors.get(node))
            continue
        excluded.append(node)
        if node in errors:
            reason = f"preflight could not run: {errors[node]}"
        else:
            reason = "; ".join(item.describe() for item in found)
        decisions[node] = Decision(node, True, reason, found, errors.get(node))
    for node in nodes:
        decisions.setdefault(
            node, Decision(node, False, "no strong evidence (a far outlier and beyond a limit)")
        )
    kept = tuple(node for node in nodes if node not in excluded)
    return PolicyResult(
        kept=kept,
        excluded=tuple(excluded),
        minimum_nodes=floor,
        decisions=tuple(decisions[node] for node in nodes),
    )


def _evidence(outlier: Outlier, limit: float) -> Evidence:
    beyond = outlier.value < limit if outlier.bad == "low" else outlier.value > limit
    return Evidence(
        metric=outlier.metric,
        value=outlier.value,
        median=outlier.median,
        factor=outlier.factor,
        robust_z=outlier.robust_z if math.isfinite(outlier.robust_z) else 1e9,
        limit=limit,
        beyond_limit=beyond,
    )
