"""Which layer holds a slow node's extra time: ``benchfs.health.layers.attribute``
over the node's figures against the other nodes', from the live figures.

Where that module is not installed the split is the one the daemon's own
counters show (queue, storage op, the rest of the request), said as such.
"""

from __future__ import annotations

import importlib
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from analysis.verdicts import Layer, LayerTime
from benchfs.run.live.figures import NodeFigures


@dataclass(frozen=True)
class Where:
    layer: Layer
    layers: list[LayerTime]
    evidence: list[str]
    sentence: str


def _layers_module() -> Any:
    try:
        return importlib.import_module("benchfs.health.layers")
    except ImportError:
        return None


def _sample(module: Any, figures: NodeFigures) -> Any:
    return module.LayerSample(
        ops=figures.ops,
        client_ms=figures.client_ms,
        server_ms=figures.server_ms,
        queue_ms=figures.queue_ms,
        storage_op_ms=figures.storage_op_ms,
        rtt_ms=None,
        await_ms=None,
        util_pct=None,
        device_mb_s=None,
        job_mb_s=figures.mib_s * (1 << 20) / 1e6,
        kernel=dict(figures.kernel),
    )


def _median(values: Sequence[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.median(known) if known else None


def where(node: NodeFigures, others: Sequence[NodeFigures]) -> Where:
    """The layer of ``node``'s extra time over ``others``."""
    module = _layers_module()
    if module is not None:
        found = module.attribute(_sample(module, node), [_sample(module, o) for o in others])
        return Where(found.layer, list(found.layers), list(found.evidence), found.sentence)
    return _own_split(node, others)


def _own_split(node: NodeFigures, others: Sequence[NodeFigures]) -> Where:
    parts: list[tuple[Layer, str, float | None, float | None]] = [
        ("queue", "queue", node.queue_ms, _median([o.queue_ms for o in others])),
        ("unknown", "storage op", node.storage_op_ms, _median([o.storage_op_ms for o in others])),
        ("client", "ranks' wait", node.client_ms, _median([o.client_ms for o in others])),
    ]
    layers = [LayerTime(layer=layer, node=mine, others=theirs)
              for layer, _, mine, theirs in parts if mine is not None]  # fmt: skip
    extra = [(mine - theirs, layer, name, mine, theirs)
             for layer, name, mine, theirs in parts
             if mine is not None and theirs is not None]  # fmt: skip
    if not extra:
        return Where("unknown", layers, [], "slow; no layer measured")
    gained, layer, name, mine, theirs = max(extra)
    evidence = [f"{name} {mine:.3g} ms vs {theirs:.3g} ms on the other nodes (+{gained:.3g} ms)"]
    return Where(layer, layers, evidence, f"{name} +{gained:.3g} ms")
