"""Every statistic of a set of traces in one object, computed once.

Reports, the command line and notebooks all read from this, so a number
shown in one place is the number shown in another.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Literal

import pandas as pd

from analysis.loaders.traces import TraceSet
from analysis.stats import crosscheck, interference, io_depth, latency, nodes, read_write, rpc
from analysis.stats._common import sums_by_pair
from analysis.stats.read_write import Gap
from analysis.timing import step

STORAGE_OP = "storage_op"
SUBMIT = "submit"
RPC_CLIENT = "rpc_client"
RPC_SERVER = "rpc_server"
Part = Literal["io_depth", "storage", "rpc"]
ALL_PARTS: tuple[Part, ...] = ("io_depth", "storage", "rpc")


@dataclass
class TraceStats:
    start_unix_ns: int
    bucket_s: float = 10.0
    slow_ms: float = nodes.SLOW_MS
    io_depth: io_depth.IoDepthSummary | None = None
    io_depth_histogram: pd.DataFrame | None = None
    io_depth_by_node: pd.DataFrame | None = None
    io_depth_over_time: pd.DataFrame | None = None
    # Batching that did not happen although ops were waiting (a sentence), if so.
    io_depth_warning: str | None = None
    # What the submits allow saying about batching (a sentence), when there are any.
    batching: str | None = None
    latency_by_op: pd.DataFrame | None = None
    latency_buckets: pd.DataFrame | None = None
    # Operations whose mean is far above their median (sentences).
    latency_hints: list[str] = field(default_factory=list)
    node_table: pd.DataFrame | None = None
    node_over_time: pd.DataFrame | None = None
    persistence: pd.DataFrame | None = None
    slow_nodes: list[str] = field(default_factory=list)
    bytes_by_node: pd.DataFrame | None = None
    rpc_phases: pd.DataFrame | None = None
    rpc_retries: rpc.RetrySummary | None = None
    rpc_in_flight: pd.DataFrame | None = None
    rpc_load: pd.DataFrame | None = None
    rpc_request_imbalance: rpc.Imbalance | None = None
    rpc_bytes_imbalance: rpc.Imbalance | None = None
    crosscheck: pd.DataFrame | None = None
    # Per node: reads and writes per op, split into client, queue, storage and disk.
    read_write: pd.DataFrame | None = None
    read_write_gaps: list[Gap] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)


def trace_stats(
    traces: TraceSet,
    *,
    iostat: pd.DataFrame | None = None,
    all_nodes: Iterable[str] = (),
    bucket_s: float = 10.0,
    slow_ms: float = nodes.SLOW_MS,
    parts: Collection[Part] = ALL_PARTS,
) -> TraceStats:
    """Compute every statistic the traces allow (of ``parts`` only, when given);
    absent kinds leave fields None."""
    stats = TraceStats(start_unix_ns=traces.start_unix_ns, bucket_s=bucket_s, slow_ms=slow_ms)
    start = traces.start_unix_ns
    if traces.has(interference.FOREIGN_SIGNAL):
        outside = interference.foreign_signal_finding(traces.kind(interference.FOREIGN_SIGNAL))
        if outside:
            stats.findings.append(outside)
    if "io_depth" in parts and traces.has(SUBMIT):
        with step("io_depth"):
            _io_depth(stats, traces.kind(SUBMIT), start, bucket_s)
    if "storage" in parts and traces.has(STORAGE_OP):
        _storage(stats, traces.kind(STORAGE_OP), start, bucket_s, slow_ms, iostat)
        with step("read_write"):
            _read_write(stats, traces, iostat)
    if "rpc" not in parts:
        return stats
    client = traces.kind(RPC_CLIENT) if traces.has(RPC_CLIENT) else None
    server = traces.kind(RPC_SERVER) if traces.has(RPC_SERVER) else None
    with step("rpc"):
        if client is not None or server is not None:
            stats.rpc_phases = rpc.rpc_phases(client, server)
        if client is not None:
            _rpc_client(stats, client, [*traces.server_nodes, *all_nodes])
    return stats


def _io_depth(stats: TraceStats, submits: pd.DataFrame, start: int, bucket_s: float) -> None:
    stats.io_depth = io_depth.io_depth_summary(submits)
    stats.io_depth_histogram = io_depth.io_depth_histogram(submits)
    stats.io_depth_by_node = io_depth.io_depth_by_node(submits)
    stats.io_depth_over_time = io_depth.io_depth_over_time(
        submits, start_ns=start, bucket_s=bucket_s
    )
    stats.io_depth_warning = io_depth.batching_warning(stats.io_depth)
    stats.batching = io_depth.batching_verdict(stats.io_depth)
    if stats.io_depth_warning:
        stats.findings.append(stats.io_depth_warning)


def _storage(
    stats: TraceStats,
    ops: pd.DataFrame,
    start: int,
    bucket_s: float,
    slow_ms: float,
    iostat: pd.DataFrame | None,
) -> None:
    with step("latency"):
        stats.latency_by_op = latency.latency_by_op(ops)
        stats.latency_buckets = latency.latency_buckets(ops)
        stats.latency_hints = latency.bimodal_hints(stats.latency_by_op)
    stats.findings += stats.latency_hints
    with step("nodes"):
        _nodes(stats, ops, start, bucket_s, slow_ms)
    if iostat is not None and not iostat.empty:
        with step("crosscheck"):
            stats.crosscheck = crosscheck.crosscheck_iostat(
                ops, iostat, slow_nodes=stats.slow_nodes
            )


def _nodes(
    stats: TraceStats, ops: pd.DataFrame, start: int, bucket_s: float, slow_ms: float
) -> None:
    stats.node_table = nodes.node_latency_table(ops, slow_ms=slow_ms)
    stats.slow_nodes = nodes.flag_slow_nodes(stats.node_table)
    stats.node_over_time = nodes.node_latency_over_time(
        ops, start_ns=start, bucket_s=bucket_s, slow_ms=slow_ms
    )
    stats.persistence = nodes.slow_node_persistence(stats.node_over_time)
    if stats.slow_nodes:
        when = stats.persistence.set_index("node")["when"]
        described = ", ".join(f"{n} ({when.get(n) or 'slow'})" for n in stats.slow_nodes)
        stats.findings.append(
            f"slow nodes (over {slow_ms:g} ms or far above the rest): {described}"
        )
    stats.bytes_by_node = sums_by_pair(ops["node"], ops["op"], ops["bytes"].to_numpy())


def _read_write(stats: TraceStats, traces: TraceSet, iostat: pd.DataFrame | None) -> None:
    """Reads against writes per node, and a finding where they differ by a factor."""
    stats.read_write = read_write.read_write_table(
        traces.kind(STORAGE_OP),
        traces.kind(RPC_CLIENT) if traces.has(RPC_CLIENT) else None,
        traces.kind(RPC_SERVER) if traces.has(RPC_SERVER) else None,
        iostat,
    )
    stats.read_write_gaps = read_write.read_write_gaps(stats.read_write)
    stats.findings += [gap.sentence() for gap in stats.read_write_gaps]


def _rpc_client(stats: TraceStats, client: pd.DataFrame, all_nodes: list[str]) -> None:
    stats.rpc_retries = rpc.rpc_retries(client)
    stats.rpc_in_flight = rpc.rpc_in_flight(client)
    stats.rpc_load = rpc.rpc_load_by_target(client, all_nodes=all_nodes)
    stats.rpc_request_imbalance = rpc.imbalance(stats.rpc_load["requests"])
    stats.rpc_bytes_imbalance = rpc.imbalance(stats.rpc_load["bytes"])
    balance = stats.rpc_request_imbalance
    if balance.idle_targets:
        stats.findings.append(
            f"{balance.idle_targets} node(s) received no RPCs at all: clients may have "
            "started before every server registered, or placement skips them"
        )
    elif balance.max_over_mean >= 1.5:
        stats.findings.append(
            f"RPC load is imbalanced: the busiest target gets {balance.max_over_mean:.1f}x "
            f"the mean (coefficient of variation {balance.cv:.2f})"
        )
    retries = stats.rpc_retries
    if retries.rpcs and retries.retried_pct >= 1.0:
        stats.findings.append(
            f"{retries.retried_pct:.1f}% of RPCs needed retries ({retries.total_retries:,} "
            f"retries), {retries.failed_rpcs:,} failed"
        )
