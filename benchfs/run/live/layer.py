"""Which layer holds a slow node's extra time: ``benchfs.health.layers.attribute``
over the node's live figures against the other nodes'."""

from __future__ import annotations

from collections.abc import Sequence

from benchfs.health.layers import Attribution, LayerSample, attribute
from benchfs.run.live.figures import NodeFigures

MB = 1e6


def layer_sample(figures: NodeFigures, job_mib_s: float | None = None) -> LayerSample:
    """The figures as ``attribute`` reads them; ``job_mib_s``: the job's bytes on
    the node's device (its daemon's, and those of the daemons sharing it)."""
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
        job_mb_s=(figures.mib_s if job_mib_s is None else job_mib_s) * (1 << 20) / MB,
        kernel=dict(figures.kernel),
    )


def where(node: NodeFigures, others: Sequence[NodeFigures]) -> Attribution:
    """The layer of ``node``'s extra time over ``others``."""
    nodes = [node, *others]
    return attribute(
        layer_sample(node, _job_on_device(node, nodes)),
        [layer_sample(other, _job_on_device(other, nodes)) for other in others],
    )


def _device(figures: NodeFigures) -> tuple[str | None, object]:
    device = figures.kernel.get("device")
    return figures.host, device.get("name") if isinstance(device, dict) else None


def _job_on_device(node: NodeFigures, nodes: Sequence[NodeFigures]) -> float:
    """The MiB/s of every daemon whose data is on ``node``'s device (nodes of one
    host sharing a disk): the job's own I/O there, none of it from outside."""
    mine = _device(node)
    if mine[1] is None:
        return node.mib_s
    return sum(other.mib_s for other in nodes if _device(other) == mine)
