"""Assemble the report of one run from its RunData and TraceStats."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.loaders.run import RunData, flatten
from analysis.manifest import (
    ExcludedHost,
    HistoryConsulted,
    HistoryNotConsulted,
    HistoryRecord,
    HostEntry,
    HostsRecord,
)
from analysis.reports import plots
from analysis.reports.headline import headline_table, run_title
from analysis.reports.model import Figure, Report, Section, Table
from analysis.reports.phases import DATA_COLUMNS, phase_tables, tool_output_tables
from analysis.reports.suite import suite_tables
from analysis.stats import read_write
from analysis.stats.nodes import node_latency_over_time
from analysis.stats.overview import STORAGE_OP, TraceStats, trace_stats
from analysis.timing import step

WORKLOAD_COLUMNS = DATA_COLUMNS
MAX_NODE_ROWS = 32
# Time series tables are shown for this many slow nodes (all are in the heatmap).
MAX_SLOW_NODE_SERIES = 3


def build_report(run: RunData, plots_dir: Path, stats: TraceStats | None = None) -> Report:
    """The report of ``run``; PNGs are written into ``plots_dir``.

    It leads with the answer: the title (label, target, date), the findings,
    the headline table, the per-node results; then every figure in detail;
    the manifest and the configuration last."""
    if stats is None and run.traces is not None:
        with step("statistics"):
            stats = trace_stats(run.traces, iostat=run.iostat, all_nodes=_hosts_used(run))
    report = Report(run_title(run))
    _findings(report.section("Findings"), run, stats)
    results = report.section("Results")
    if run.suite is not None:
        results.tables += suite_tables(run.workload, run.suite)
    headline = headline_table(run)
    if headline is not None:
        results.tables.append(headline)
    ops = None
    if run.traces is not None and run.traces.has(STORAGE_OP):
        ops = run.traces.kind(STORAGE_OP)
    nodes = Section("Nodes")
    _nodes(nodes, run, stats, ops, plots_dir)
    if nodes.bullets or nodes.tables:
        report.sections.append(nodes)
    _history_section(report, run)
    workload = report.section("Every figure of each phase")
    workload.tables += phase_tables(run.workload)
    if run.tool_dir is not None:
        workload.tables += tool_output_tables(run.tool_dir.tool_outputs, run.tool_dir.ignored_files)
    if stats is not None and run.traces is not None:
        add_trace_sections(report, ops, stats, plots_dir)
    if run.preflight is not None:
        section = report.section("Preflight (fio)")
        section.tables.append(Table("fio per node, job and direction", run.preflight))
    _run_section(report, run)
    return report


def add_trace_sections(
    report: Report, ops: pd.DataFrame | None, stats: TraceStats, plots_dir: Path
) -> None:
    """Latency, io_depth, RPC and cross-check sections from trace statistics (the
    nodes have their own section, near the top)."""
    if stats.latency_by_op is not None and ops is not None:
        section = report.section("Storage I/O latency")
        section.tables.append(Table("Latency per operation", stats.latency_by_op))
        if stats.latency_buckets is not None:
            section.tables.append(Table("Share of ops per latency bucket", stats.latency_buckets))
        with step("plots.latency_cdf"):
            path = plots.latency_cdf(ops, plots_dir / "latency_cdf.png", highlight=stats.slow_nodes)
        section.figures.append(Figure("Latency CDF per node", path))
    if stats.io_depth is not None:
        _io_depth(report.section("io_depth (SQEs per io_uring submit)"), stats, plots_dir)
    if stats.rpc_phases is not None:
        _rpc(report.section("RPC"), stats)
    if stats.crosscheck is not None:
        section = report.section("Cross-check with iostat")
        section.paragraphs.append(
            "The engine's per-node means beside iostat's r_await/w_await of the same node "
            "during the same time window."
        )
        section.tables.append(Table("Engine vs iostat per node", stats.crosscheck))
    if stats.read_write is not None and read_write.compared(stats.read_write):
        section = report.section("Reads against writes")
        section.paragraphs.append(
            "Per node and op, mean ms per operation: what a client waited for one RPC "
            "(total), the request's wait in the daemon (queue), the storage operation, "
            "and the disk's own await from iostat in the same window."
        )
        section.tables.append(Table("Reads and writes per op, per node", stats.read_write))


def _findings(section: Section, run: RunData, stats: TraceStats | None) -> None:
    section.bullets += _history_lines(run)
    if run.verdicts is not None:
        # The live view's verdicts: the node, its figure against the others, its pattern.
        section.bullets += [f"live: {verdict.verdict}" for verdict in run.verdicts.slow()]
    section.bullets += stats.findings if stats else []
    if stats is not None and stats.crosscheck is not None:
        for row in stats.crosscheck.itertuples(index=False):
            if row.engine_slow or row.disk_slow:
                section.bullets.append(f"{row.node}: {row.verdict}")
    if stats is None:
        section.bullets.append(
            "no engine traces in this run: only the workload summary is reported"
        )
    elif not section.bullets:
        checked = _checked(stats)
        section.bullets.append(
            f"nothing stands out: {', '.join(checked)}" if checked else "nothing stands out"
        )
    if stats is not None and stats.batching and not stats.io_depth_warning:
        section.bullets.append(stats.batching)
    section.bullets += [f"data loss: {note}" for note in run.notes]
    if run.absent:
        section.bullets.append(f"not in this run: {', '.join(run.absent)}")


def _history(run: RunData) -> HistoryRecord | None:
    preflight = run.preflight_record
    return None if preflight is None else preflight.history


def _history_lines(run: RunData) -> list[str]:
    """What the history said before the run (benchfs.run.history_step), one line a node."""
    history = _history(run)
    if isinstance(history, HistoryNotConsulted):
        reason = history.reason
        return [f"history not consulted: {reason}"] if reason and "off" not in reason else []
    return [] if history is None else [node.line for node in history.nodes if node.line]


def _history_section(report: Report, run: RunData) -> None:
    """The runs each node was judged on before this one: its history's evidence."""
    history = _history(run)
    if not isinstance(history, HistoryConsulted) or not history.nodes:
        return
    section = report.section("Node history")
    done = "left out" if history.action == "exclude" else "named"
    section.paragraphs.append(
        f"Before the run the history ({history.database}) was asked about every node: "
        f"one {history.rule} is {done}; one flagged and then clean is said to have "
        "recovered. Each node's recent runs, newest first:"
    )
    rows = [
        (node.node, node.decision, node.status, past["started_at"], past["label"],
         "yes" if past["flagged"] else "no", past.get("reason") or "-")
        for node in history.nodes for past in node.evidence.get("runs") or []
    ]  # fmt: skip
    columns = ["node", "decision", "status", "run started", "run", "flagged", "verdict"]
    section.tables.append(Table("Each node's recent runs", pd.DataFrame(rows, columns=columns)))


def _checked(stats: TraceStats) -> list[str]:
    """What the quiet checks covered (batching has its own bullet)."""
    checked = []
    if stats.node_table is not None:
        checked.append("no slow node")
    if stats.read_write is not None and read_write.compared(stats.read_write):
        checked.append("reads and writes within 2x per op")
    if stats.rpc_request_imbalance is not None:
        checked.append("RPC load balanced")
    return checked


def _run_section(report: Report, run: RunData) -> None:
    """What ran and how: the manifest, then the effective configuration."""
    section = report.section("Run: manifest", collapsed=True)
    rows = [(key, value) for key, value in run.manifest.items() if _is_scalar(value)]
    command = run.manifest.get("command_line")
    if isinstance(command, list):
        rows.append(("command_line", " ".join(map(str, command))))
    rows.append(("results directory", str(run.path)))
    if run.logs:
        section.bullets.append(f"logs: {', '.join(run.logs)}")
    section.tables.append(
        Table("Manifest", pd.DataFrame(rows, columns=["field", "value"]).astype(str))
    )
    if run.config:
        flat = flatten(run.config)
        report.section("Run: effective configuration", collapsed=True).tables.append(
            Table(
                "Effective configuration",
                pd.DataFrame(list(flat.items()), columns=["key", "value"]).astype(str),
            )
        )


def _hosts(section: Section, hosts: HostsRecord | None) -> None:
    if hosts is not None:
        section.bullets.append(f"hosts given: {_describe(hosts.given)}")
        section.bullets.append(f"hosts used: {_describe(hosts.used)}")
        section.bullets.append(f"hosts excluded: {_describe(hosts.excluded)}")


def _nodes(
    section: Section,
    run: RunData,
    stats: TraceStats | None,
    ops: pd.DataFrame | None,
    plots_dir: Path,
) -> None:
    """The hosts given, used and left out, then each node's figures from the traces."""
    _hosts(section, run.hosts)
    if stats is None or stats.node_table is None or stats.node_over_time is None:
        return
    table = stats.node_table
    caption = "Per node, worst first (slow = over the threshold)"
    if len(table) > MAX_NODE_ROWS:
        caption += f"; {MAX_NODE_ROWS} of {len(table)} nodes shown"
    section.tables.append(Table(caption, table.head(MAX_NODE_ROWS)))
    if stats.persistence is not None:
        affected = stats.persistence[stats.persistence["pattern"] != "none"]
        if not affected.empty:
            section.tables.append(
                Table("Slow nodes over time: whole, onset, intermittent or recovered", affected)
            )
    over_time = stats.node_over_time
    if ops is not None:
        with step("statistics"), step("slow_node_series"):
            for node in stats.slow_nodes[:MAX_SLOW_NODE_SERIES]:
                section.tables.append(_slow_node_series(node, ops, stats))
    with step("plots.node_heatmap"):
        path = plots.node_heatmap(over_time, plots_dir / "node_heatmap.png")
    section.figures.append(Figure("Slow ops per node over time", path))
    if stats.bytes_by_node is not None:
        with step("plots.bytes_per_node"):
            path = plots.bytes_per_node(stats.bytes_by_node, plots_dir / "bytes_per_node.png")
        section.figures.append(Figure("Bytes per node", path))


def _slow_node_series(node: str, ops: pd.DataFrame, stats: TraceStats) -> Table:
    """The node's slower op kind (read or write) over time, as people tabulate it."""
    assert stats.node_table is not None
    row = stats.node_table[stats.node_table["node"] == node]
    read_ms, write_ms = row[["read_mean_ms", "write_mean_ms"]].to_numpy(dtype=float)[0]
    # NaN (no ops of that kind) compares false, so a node with only writes shows writes
    op = "write" if write_ms > read_ms or math.isnan(read_ms) else "read"
    series = node_latency_over_time(
        ops[ops["node"] == node],
        start_ns=stats.start_unix_ns,
        bucket_s=stats.bucket_s,
        slow_ms=stats.slow_ms,
        op=op,
    )
    return Table(f"{node}: {op}s over time", series.drop(columns="node"))


def _io_depth(section: Section, stats: TraceStats, plots_dir: Path) -> None:
    assert stats.io_depth is not None and stats.io_depth_histogram is not None
    summary = pd.DataFrame(stats.io_depth.rows(), columns=["metric", "value"])
    section.tables.append(Table("io_depth over all submits", summary))
    section.tables.append(Table("Submits per io_depth bucket", stats.io_depth_histogram))
    if stats.io_depth_by_node is not None:
        section.tables.append(Table("io_depth per node", stats.io_depth_by_node))
    with step("plots.io_depth_histogram"):
        path = plots.io_depth_histogram(stats.io_depth_histogram, plots_dir / "io_depth_hist.png")
    section.figures.append(Figure("io_depth histogram", path))


def _rpc(section: Section, stats: TraceStats) -> None:
    assert stats.rpc_phases is not None
    section.tables.append(Table("RPC time per phase", stats.rpc_phases))
    if stats.rpc_retries is not None:
        r = stats.rpc_retries
        section.bullets.append(
            f"{r.rpcs:,} RPCs; {r.retried_rpcs:,} retried ({r.retried_pct:.2f}%), "
            f"{r.total_retries:,} retries in all; {r.failed_rpcs:,} failed ({r.failed_pct:.2f}%)"
            + (f": {', '.join(r.failures)}" if r.failures else "")
        )
    for name, balance in (
        ("requests", stats.rpc_request_imbalance),
        ("bytes", stats.rpc_bytes_imbalance),
    ):
        if balance is not None:
            section.bullets.append(
                f"{name} per target: max/mean {balance.max_over_mean:.2f}, "
                f"coefficient of variation {balance.cv:.2f}, idle targets {balance.idle_targets}"
            )
    if stats.rpc_load is not None:
        section.tables.append(Table("Load per target node", stats.rpc_load))
    if stats.rpc_in_flight is not None:
        section.tables.append(Table("RPCs in flight per client process", stats.rpc_in_flight))


def _hosts_used(run: RunData) -> list[str]:
    return [] if run.hosts is None else [host.name for host in run.hosts.used]


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None


def _describe(hosts: Sequence[HostEntry | ExcludedHost]) -> str:
    """Hosts as people read them: names, with the reason where one is given."""
    described = [
        f"{host.name} ({host.reason})" if isinstance(host, ExcludedHost) and host.reason
        else host.name
        for host in hosts
    ]  # fmt: skip
    return ", ".join(described) or "none"
