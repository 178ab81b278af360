"""Which layer holds a slow node's extra time: ``benchfs.health.layers.attribute``
over the node's live figures against the other nodes'."""

from __future__ import annotations

from collections.abc import Sequence

from benchfs.health.layers import Attribution, LayerSample, attribute
from benchfs.run.live.figures import NodeFigures

MB = 1e6


def layer_sample(figures: NodeFigures) -> LayerSample:
    """The figures as ``attribute`` reads them."""
    return LayerSample(
        ops=figures.ops,
        client_ms=figures.client_ms,
        server_ms=figures.server_ms,
        queue_ms=figures.queue_ms,
        storage_op_ms=figures.storage_op_ms,
        rtt_ms=figures.rtt_ms,
        bulk_rtt_ms=figures.bulk_rtt_ms,
        await_ms=figures.await_ms,
        util_pct=figures.util_pct,
        device_mb_s=figures.device_mb_s,
        job_mb_s=figures.mib_s * (1 << 20) / MB,
        kernel=dict(figures.kernel),
    )


def where(node: NodeFigures, others: Sequence[NodeFigures]) -> Attribution:
    """The layer of ``node``'s extra time over ``others``."""
    return attribute(layer_sample(node), [layer_sample(other) for other in others])
