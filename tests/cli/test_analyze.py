"""`benchfs analyze`, `benchfs report` and `benchfs compare` through the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from analysis_support import REPO, build_run, fio_text, iostat_text, run_dir, write_records
from typer.testing import CliRunner

from benchfs.cli.main import app

__all__ = ["fio_text", "iostat_text", "run_dir"]  # fixtures used below

runner = CliRunner()


def _traces(run: Path) -> str:
    return str(run / "traces")


def test_io_depth_tables(run_dir: Path) -> None:
    result = runner.invoke(app, ["analyze", "io-depth", _traces(run_dir), "--by-node"])
    assert result.exit_code == 0, result.output
    assert "mean io_depth (SQEs)" in result.output
    assert "submits per io_depth bucket" in result.output
    assert "io_depth per node" in result.output and "node03" in result.output


def test_latency_csv_by_node(run_dir: Path) -> None:
    result = runner.invoke(app, ["analyze", "latency", _traces(run_dir), "--by-node", "--csv"])
    assert result.exit_code == 0, result.output
    sections = result.stdout.split("# ")
    titles = [section.splitlines()[0] for section in sections[1:]]
    assert titles == [
        "storage op latency per operation",
        "share of ops per latency bucket",
        "per node (slow = over 100 ms), worst first",
        "slow ops over time (10 s buckets)",
    ]
    per_node = sections[3].splitlines()
    assert per_node[1].startswith("node,ops,slow_ops,slow_pct,mean_ms")
    assert per_node[2].startswith("node03,")
    assert "node03" in sections[4] and "constant" in sections[4]


def test_latency_threshold_option(run_dir: Path) -> None:
    result = runner.invoke(
        app, ["analyze", "latency", _traces(run_dir), "--by-node", "--slow-ms", "50000", "--csv"]
    )
    assert result.exit_code == 0
    assert "per node (slow = over 50000 ms)" in result.stdout
    assert "constant" not in result.stdout


def test_report_command(run_dir: Path) -> None:
    result = runner.invoke(app, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert "4 plots" in result.output
    assert (run_dir / "report.html").stat().st_size > 10_000
    assert "node03 (constant)" in (run_dir / "report.md").read_text()


def test_compare_command(run_dir: Path, tmp_path: Path, iostat_text: str, fio_text: str) -> None:
    other = build_run(tmp_path / "other", iostat_text, fio_text, slow_nodes=(), bw=2000.0,
                      config={"storage": {"fsync": "never"}})  # fmt: skip
    result = runner.invoke(app, ["compare", str(run_dir), str(other), "--csv"])
    assert result.exit_code == 0, result.output
    assert "write,bwMeanMIB,1000.0,2000.0,100.0" in result.stdout
    assert "storage.fsync,on_close,never" in result.stdout
    assert "storage.direct,True,-" in result.stdout


def test_errors_are_one_line_through_the_real_entry_point(tmp_path: Path) -> None:
    broken = tmp_path / "broken.bftrace"
    broken.write_bytes(b"NOTATRACEFILE" * 4)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "analyze", "latency", str(broken)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "bad magic" in done.stderr and "broken.bftrace" in done.stderr
    assert "Traceback" not in done.stderr


def test_partial_load_warns_and_goes_on(run_dir: Path) -> None:
    trace = sorted((run_dir / "traces").glob("*.bftrace"))[0]
    trace.write_bytes(trace.read_bytes()[:-5])
    result = runner.invoke(app, ["analyze", "io-depth", _traces(run_dir), "--allow-partial"])
    assert result.exit_code == 0
    assert "dropped 43 bytes" in result.output


def test_report_subprocess(run_dir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "report", str(run_dir), "--out", str(run_dir / "r")],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (run_dir / "r" / "report.md").is_file()
    assert (run_dir / "r" / "plots" / "node_heatmap.png").is_file()


def test_bench_analysis_json() -> None:
    result = runner.invoke(app, ["bench", "analysis", "--json", "--events", "20000"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["events"] == 20_000 and figures["nodes"] == 16
    # 48-byte records plus one small header per node file
    assert 20_000 * 48 < figures["trace_bytes"] < 20_000 * 48 + 16 * 4096
    assert figures["load_s"] > 0 and figures["report_s"] > 0
    assert figures["total_s"] == figures["load_s"] + figures["report_s"]
    assert figures["cpu_s"] > 0
    assert 50 * 2**20 < figures["peak_rss_bytes"] < figures["target_peak_bytes"]
    assert set(figures) >= {"within_targets", "target_s", "generate_s"}


def test_cli_default_threshold_is_the_library_default() -> None:
    from analysis.stats.nodes import SLOW_MS
    from benchfs.cli import analyze

    assert analyze.SLOW_MS == SLOW_MS


def test_rpc_tables(run_dir: Path) -> None:
    result = runner.invoke(app, ["analyze", "rpc", _traces(run_dir), "--csv"])
    assert result.exit_code == 0, result.output
    sections = {part.splitlines()[0]: part for part in result.stdout.split("# ")[1:]}
    assert list(sections) == [
        "RPC time per phase",
        "RPC retries and failures",
        "RPCs in flight per client process",
        "load per target node",
        "imbalance across targets (max/mean, coefficient of variation)",
    ]
    phases = sections["RPC time per phase"]
    assert "client total" in phases and "server storage" in phases
    load = sections["load per target node"].splitlines()
    assert load[1] == "target,requests,bytes,MiB,requests_pct"
    assert [line.split(",")[0] for line in load[2:]] == ["node00", "node01", "node02", "node03"]
    assert "requests," in sections["imbalance across targets (max/mean, coefficient of variation)"]


def test_rpc_without_rpc_events_names_what_is_there(tmp_path: Path) -> None:
    path = write_records(tmp_path / "t.bftrace", [{"kind": "storage_op", "op": "read"}])
    result = runner.invoke(app, ["analyze", "rpc", str(path)])
    assert result.exit_code != 0
    assert "no 'rpc_client' events" in str(result.exception)
    assert "storage_op" in str(result.exception)
