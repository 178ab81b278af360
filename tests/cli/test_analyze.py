"""`benchfs analyze`, `benchfs report` and `benchfs compare` through the command line."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from analysis_support import REPO, build_run, fio_text, iostat_text, run_dir, write_records
from typer.testing import CliRunner

from analysis.synthetic import write_run_dir
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
    assert "node03" in sections[4] and "whole" in sections[4]


def test_latency_threshold_option(run_dir: Path) -> None:
    result = runner.invoke(
        app, ["analyze", "latency", _traces(run_dir), "--by-node", "--slow-ms", "50000", "--csv"]
    )
    assert result.exit_code == 0
    assert "per node (slow = over 50000 ms)" in result.stdout
    assert "whole" not in result.stdout


def test_report_command(run_dir: Path) -> None:
    result = runner.invoke(app, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert "4 plots" in result.output
    assert (run_dir / "report.html").stat().st_size > 10_000
    assert "node03 (slow from the start to the end)" in (run_dir / "report.md").read_text()


def test_compare_command(run_dir: Path, tmp_path: Path, iostat_text: str, fio_text: str) -> None:
    other = build_run(tmp_path / "other", iostat_text, fio_text, slow_nodes=(), bw=2000.0,
                      config={"storage": {"fsync": "never"}})  # fmt: skip
    result = runner.invoke(app, ["compare", str(run_dir), str(other), "--csv"])
    assert result.exit_code == 0, result.output
    assert "write,bwMeanMIB,1000.0,2000.0,100.0" in result.stdout
    assert "storage.fsync,on_close,never" in result.stdout
    assert "storage.direct,True,-" in result.stdout
    assert "no noise estimate (1 repetition)" in result.stdout


def _summary_run(
    root: Path, bandwidths: list[float], sweep: dict[str, object] | None = None
) -> Path:
    """A results directory whose summary has per-repetition rows (as `benchfs run` writes)."""
    config = {"workload": {"repetitions": 5}}
    write_run_dir(root, manifest={"label": "run", "sweep": sweep, "effective_config": config})
    repetitions = [{"phase": phase, "repetition": index, "bwMiB": bw, "iops": bw * 16,
                    "wrRdTime": 64 / bw, "p99_us": 900.0 + index}
                   for phase in ("write", "read")
                   for index, bw in enumerate(bandwidths)]  # fmt: skip
    phases = [{"phase": phase, "bwMeanMIB": sum(bandwidths) / len(bandwidths)}
              for phase in ("write", "read")]  # fmt: skip
    summary = {"phases": phases, "repetitions": repetitions}
    (root / "workload" / "summary.json").write_text(json.dumps(summary))
    return root


BW = [100.0, 104.0, 97.0, 101.0, 99.0]


def test_compare_json_carries_interval_test_and_verdict(tmp_path: Path) -> None:
    a = _summary_run(tmp_path / "a", BW)
    b = _summary_run(tmp_path / "b", [x / 10 for x in BW])
    result = runner.invoke(app, ["compare", str(a), str(b), "--json", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["A"] == {"label": "a", "path": str(a)}
    rows = {(row["phase"], row["metric"]): row for row in document["metrics"]}
    write_bw = rows[("write", "bwMeanMIB")]
    assert write_bw["verdict"] == "changed" and write_bw["direction"] == "worse"
    assert write_bw["ci_pct"][0] <= write_bw["change_pct"] == pytest.approx(-90.0)
    assert write_bw["ci_pct"][1] < 0 and write_bw["confidence"] == 0.95
    assert write_bw["test"] == "Mann-Whitney U (exact)" and write_bw["p_value"] < 0.01
    assert write_bw["reps_needed"] == 2 and write_bw["n_A"] == write_bw["n_B"] == 5
    assert rows[("read", "p99_us")]["verdict"] == "within noise"
    assert document["method"]["confidence"] == 0.95 and document["tested"] == 8
    report = (tmp_path / "r" / "compare.md").read_text()
    assert "changed (worse): write bwMeanMIB -90%" in report
    assert "| write | bwMeanMIB (MiB/s) | 100 | 10 | -90 |" in report
    assert "Mann-Whitney U" in report and "seed 0" in report
    assert (tmp_path / "r" / "plots" / "compare_bwMeanMIB.png").is_file()
    assert "data:image/png;base64" in (tmp_path / "r" / "compare.html").read_text()


def test_compare_table_shows_verdicts_and_the_method(tmp_path: Path) -> None:
    a = _summary_run(tmp_path / "a", BW)
    b = _summary_run(tmp_path / "b", BW[::-1])
    result = runner.invoke(app, ["compare", str(a), str(b), "--confidence", "0.99"],
                           env={"COLUMNS": "200"})  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "99% CI (%)" in result.stdout and "within noise" in result.stdout
    assert "no tested metric changed beyond run-to-run noise (8 rows tested)" in result.stdout
    assert "exact two-sided Mann-Whitney U" in result.stdout
    assert "changed (" not in result.stdout and "│ changed" not in result.stdout


def test_compare_two_sweeps(tmp_path: Path) -> None:
    for side, slow in (("a", 1.0), ("b", 5.0)):
        for index, size in enumerate((65536, 1048576)):
            values = {"workload.transfer_size": size}
            bandwidths = [x / slow for x in BW] if size == 1048576 else BW
            _summary_run(tmp_path / side / f"run-p{index}", bandwidths,
                         sweep={"index": index, "count": 2, "values": values})  # fmt: skip
    result = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--csv"])
    assert result.exit_code == 0, result.output
    assert "point,phase,metric,A,B,change_pct" in result.stdout
    lines = [line for line in result.stdout.splitlines() if ",bwMeanMIB," in line]
    assert len(lines) == 4
    large = [line for line in lines if "=1048576" in line]
    small = [line for line in lines if "=65536" in line]
    assert len(large) == len(small) == 2, lines
    assert all(",changed,worse," in line for line in large)
    assert all(",within noise,," in line for line in small)


def test_compare_a_run_with_a_sweep_is_one_clear_error(tmp_path: Path) -> None:
    run = _summary_run(tmp_path / "one", BW)
    _summary_run(tmp_path / "sweep" / "p0", BW)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "compare", str(run), str(tmp_path / "sweep")],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "is one results directory but" in done.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["compare", str(empty), str(tmp_path / "sweep")])
    assert result.exit_code != 0
    assert "neither a results directory" in str(result.exception)


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
    assert figures["target_s"] == 5.0 and figures["target_peak_bytes"] == 2**30
    steps = figures["steps"]
    assert list(steps)[:2] == ["load", "load.traces"]
    assert {"statistics.io_depth", "statistics.latency", "statistics.nodes",
            "statistics.read_write", "statistics.rpc", "plots.latency_cdf",
            "plots.node_heatmap", "plots.bytes_per_node", "plots.io_depth_histogram",
            "markdown", "html", "other"} <= set(steps)  # fmt: skip
    assert steps["load"]["wall_s"] == figures["load_s"]
    # The report's top-level steps and the rest add up to the report's time.
    report = [times for name, times in steps.items() if "." not in name and name != "load"]
    assert math.isclose(sum(t["wall_s"] for t in report), figures["report_s"], rel_tol=1e-9)
    plots = [times for name, times in steps.items() if name.startswith("plots.")]
    assert math.isclose(steps["plots"]["cpu_s"], sum(t["cpu_s"] for t in plots))
    assert all(t["wall_s"] >= 0 and t["cpu_s"] >= 0 for t in steps.values())


def test_bench_analysis_table_names_every_step() -> None:
    result = runner.invoke(app, ["bench", "analysis", "--events", "5000"], terminal_width=120)
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.stdout.splitlines()]
    names = [row[0] for row in rows if len(row) == 4 and row[0] != "step"]
    assert names[:3] == ["load", "traces", "report"]
    assert {"statistics", "latency", "read_write", "plots", "latency_cdf", "markdown",
            "html"} <= set(names)  # fmt: skip
    assert "within the targets (5 s, 1 GiB)" in " ".join(result.stdout.split())


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
