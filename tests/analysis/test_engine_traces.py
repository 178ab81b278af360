"""The reader against traces the engine really wrote (a ChunkStore with trace_dir)."""

from __future__ import annotations

from pathlib import Path

import pytest
from analysis_support import engine_trace_support, write_engine_traces

from analysis.loaders.traces import load_traces
from analysis.stats.io_depth import io_depth_summary
from analysis.stats.latency import latency_by_op

_REASON = engine_trace_support()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=_REASON or "")


def test_engine_written_trace_loads_with_its_own_names(tmp_path: Path) -> None:
    trace_dir = tmp_path / "traces"
    operations = write_engine_traces(trace_dir, tmp_path / "data", node="node07", node_id=7)
    files = sorted(trace_dir.glob("*.bftrace"))
    assert len(files) == 1
    assert files[0].name.startswith("trace-node07-")
    traces = load_traces([trace_dir])
    (header,) = traces.headers
    assert header.node == "node07" and header.node_id == 7
    assert header.raw["format"] == "benchfs-trace"
    ops = traces.kind("storage_op")
    assert set(ops["node"]) == {"node07"}
    assert {"write", "read"} <= set(ops["op"].astype(str))
    # every write and read we made completed as at least one storage op, all successful
    assert len(ops) >= operations
    assert (ops["status"] == 0).all()
    assert (ops["latency_ns"] > 0).all()
    assert ops.loc[ops["op"] == "write", "bytes"].sum() >= 8 * 256 * 1024
    assert (ops["time_ns"] >= header.start_unix_ns).all()
    summary = io_depth_summary(traces.kind("submit"))
    assert summary.submits >= 1 and summary.mean >= 1
    table = latency_by_op(ops).set_index("op")
    assert table.loc["read", "count"] >= 8
