"""The tables of the results database, one definition for SQLite and PostgreSQL.

``SCHEMA_VERSION`` is kept in ``meta``; a database of a newer version is
refused by name rather than written with rows it would not understand.
Times are ISO 8601 text in UTC (``2026-12-01T23:10:04Z``): they sort as
they read, in both databases. ``details``, ``figures`` and ``evidence``
hold JSON text: what a reader may want beyond the columns.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

SCHEMA_VERSION = 1

metadata = MetaData()

meta = Table(
    "meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("uid", String(64), nullable=False, unique=True),
    Column("kind", String(32), nullable=False),
    Column("cluster", String(64), nullable=False),
    Column("label", String(128), nullable=False),
    Column("results_dir", Text, nullable=False),
    Column("command", Text, nullable=False),
    Column("started_at", String(32), nullable=False),
    Column("ended_at", String(32)),
    Column("status", String(16), nullable=False),
    Column("error", Text),
    Column("workload_key", Text, nullable=False),
    Column("node_count", Integer, nullable=False),
    Column("benchfs_version", String(32), nullable=False),
    Column("recorded_at", String(32), nullable=False),
    Column("details", Text, nullable=False),
    Index("runs_by_cluster_time", "cluster", "started_at"),
)


def _run_id() -> Column[int]:
    return Column(
        "run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True
    )


run_nodes = Table(
    "run_nodes",
    metadata,
    _run_id(),
    Column("node", String(255), nullable=False),
    Column("role", String(16), nullable=False),
    Column("excluded_by", String(16)),
    Column("flagged", Boolean, nullable=False),
    Column("metric", Text, nullable=False),
    Column("layer", Text, nullable=False),
    Column("pattern", Text, nullable=False),
    Column("onset_s", Float),
    Column("value", Float),
    Column("typical", Float),
    Column("unit", String(16), nullable=False),
    Column("reason", Text, nullable=False),
    Column("ops", Integer),
    Column("mean_ms", Float),
    Column("p50_ms", Float),
    Column("p99_ms", Float),
    Column("slow_pct", Float),
    Column("read_mean_ms", Float),
    Column("write_mean_ms", Float),
    Column("preflight_decision", String(32), nullable=False),
    Column("preflight_read_MiB_s", Float),
    Column("preflight_write_MiB_s", Float),
    Column("figures", Text, nullable=False),
    Index("run_nodes_by_node", "node"),
)

verdicts = Table(
    "verdicts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    _run_id(),
    Column("node", String(255), nullable=False),
    Column("source", String(16), nullable=False),
    Column("flagged", Boolean, nullable=False),
    Column("metric", Text, nullable=False),
    Column("layer", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("pattern", Text, nullable=False),
    Column("onset_s", Float),
    Column("value", Float),
    Column("typical", Float),
    Column("unit", String(16), nullable=False),
    Column("p50_ms", Float),
    Column("p99_ms", Float),
    Column("evidence", Text, nullable=False),
)

figures = Table(
    "figures",
    metadata,
    _run_id(),
    Column("phase", String(64), nullable=False),
    Column("metric", String(64), nullable=False),
    Column("repetition", Integer, nullable=False),
    Column("value", Float, nullable=False),
)
