"""`workload.queue_depth` for real: 4 daemons, 4 ranks, one run with one
transfer in flight per rank and one with 16; the results say which, and the
client's own RPC trace shows the window it kept; at depth 1 the report does
not judge batching."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_helpers import benchfs_run, manifest, run_dirs, small_args, summary

from analysis.loaders.run import load_run
from analysis.reports.write import write_report
from analysis.stats.rpc import rpc_in_flight

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_queue_depth_1_and_16_are_kept_and_recorded(tmp_path: Path) -> None:
    done = benchfs_run(small_args(tmp_path, "--queue-depth", "1,16"))
    assert done.returncode == 0, done.stderr
    assert "queue depth 1," in done.stdout and "queue depth 16," in done.stdout
    shallow, deep = run_dirs(tmp_path / "results")
    for run_dir, depth in ((shallow, 1), (deep, 16)):
        assert manifest(run_dir)["effective_config"]["workload"]["queue_depth"] == depth
        document = summary(run_dir)
        assert document["parameters"]["queue_depth"] == depth
        assert [row["queue_depth"] for row in document["phases"]] == [depth, depth]
    windows = {}
    for run_dir in (shallow, deep):
        traces = load_run(run_dir).traces
        assert traces is not None and traces.has("rpc_client")
        per_client = rpc_in_flight(traces.kind("rpc_client"))
        assert len(per_client) == 4
        windows[run_dir] = int(per_client["max_in_flight"].max())
    assert windows[shallow] == 1
    assert windows[deep] > 1
    # One transfer in flight per rank leaves each ring too little to batch:
    # the report must not claim batching either way.
    findings = write_report(shallow).markdown.read_text().split("## Results")[0]
    assert "not enough load to judge batching" in findings
    assert "batching present" not in findings
