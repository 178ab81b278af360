"""Reports of a results directory: Markdown, self-contained HTML, readable PNGs."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from analysis.loaders.run import load_run
from analysis.reports.columns import cell, header
from analysis.reports.markdown import markdown_table
from analysis.reports.model import Table
from analysis.reports.write import write_report
from analysis.stats.overview import trace_stats

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_report_files(run_dir: Path) -> None:
    files = write_report(run_dir)
    assert files.markdown == run_dir / "report.md" and files.html == run_dir / "report.html"
    names = sorted(path.name for path in files.plots)
    assert names == ["bytes_per_node.png", "io_depth_hist.png", "latency_cdf.png",
                     "node_heatmap.png"]  # fmt: skip
    for path in files.plots:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 10_000


def test_markdown_answers_the_field_questions(run_dir: Path) -> None:
    text = write_report(run_dir).markdown.read_text()
    for heading in ("## Findings", "## Every figure of each phase", "## Storage I/O latency",
                    "## Nodes", "## io_depth (SQEs per io_uring submit)", "## RPC",
                    "## Cross-check with iostat", "## Preflight (fio)"):  # fmt: skip
        assert heading in text
    # the slow node is named in the findings, with its pattern over time
    findings = text.split("## Results")[0]
    assert "node03 (slow from the start to the end)" in findings
    # node03's reads are ~1000x its writes per op; the parts of the time are named
    assert "node03: reads are" in findings and "storage op" in findings
    assert "## Reads against writes" in text
    # submits carry ~9 ops in flight on average here: enough load to judge
    assert "batching present" in findings
    # units in the headers, p50/p99/p99.9 naming
    for column in ("p50 (ms)", "p99 (ms)", "p99.9 (ms)", "slow ops (%)", "bwMeanMIB (MiB/s)",
                   "read/write mean (ratio)", "submits (count)"):  # fmt: skip
        assert column in text
    assert "![Latency CDF per node](plots/latency_cdf.png)" in text
    # the run: hosts by name, exclusions with their reason, the command line
    assert "- hosts used: node00, node01, node02, node03" in text
    assert "- hosts excluded: node04 (preflight read p99 40x the median)" in text
    assert "| command_line | benchfs run --nodes hosts.txt |" in text
    # the per-node table puts the slow node first
    node_rows = re.findall(r"^\| (node\d\d) \|", text.split("Per node, worst first")[1], re.M)
    assert node_rows[0] == "node03"
    # and its reads over time: slow in every 10 s bucket
    series = text.split("**node03: reads over time**")[1].split("**")[0]
    rows = re.findall(r"^\| (\d+) \| .*$", series, re.M)
    assert len(rows) == 20  # 200 s of events
    for line in re.findall(r"^\| \d+ \| .*$", series, re.M):
        slow_pct = float(line.split("|")[4])
        assert slow_pct > 60  # 90% of node03's reads are slow


def test_html_is_self_contained(run_dir: Path) -> None:
    html = write_report(run_dir).html.read_text()
    images = re.findall(r'<img [^>]*src="([^"]+)"', html)
    assert len(images) == 4
    assert all(src.startswith("data:image/png;base64,") for src in images)
    assert "<table>" in html and "p99.9 (ms)" in html
    assert 'href="' not in html  # nothing to fetch


def test_report_can_go_elsewhere(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "elsewhere"
    files = write_report(run_dir, out_dir=out)
    assert files.markdown.parent == out and (out / "plots" / "latency_cdf.png").is_file()
    assert not (run_dir / "report.md").exists()


def test_report_without_traces(run_dir: Path) -> None:
    for path in (run_dir / "traces").iterdir():
        path.unlink()
    text = write_report(run_dir).markdown.read_text()
    assert "no engine traces in this run" in text
    assert "not in this run: traces/" in text
    assert "## Nodes" in text and "- hosts used: node00" in text  # the hosts, no figures
    assert "Per node, worst first" not in text


def test_trace_stats_of_the_run(run_dir: Path) -> None:
    run = load_run(run_dir)
    assert run.traces is not None
    stats = trace_stats(run.traces, iostat=run.iostat)
    assert stats.slow_nodes == ["node03"]
    assert stats.crosscheck is not None
    checked = stats.crosscheck.set_index("node")
    # real iostat samples fall in node03's window; the verdict depends on this disk's load
    assert checked.loc["node03", "iostat_samples"] >= 1
    assert checked.loc["node03", "verdict"].startswith(("disk normal", "disk slow too"))
    assert checked.loc["node01", "verdict"] == "no iostat samples in the window"
    assert stats.rpc_load is not None and len(stats.rpc_load) == 4


def test_headers_and_cells() -> None:
    assert header("p99.9_ms") == "p99.9 (ms)"
    assert header("mean_sqes") == "mean (SQEs)"
    assert header("first_slow_s") == "first slow (s)"
    assert header("slow_pct") == "slow ops (%)"
    assert cell(1234567) == "1,234,567"
    assert cell(0.012345) == "0.0123"
    assert cell(float("nan")) == "-"
    assert cell(2.0) == "2"
    assert cell(float("inf")) == "inf"
    lines = markdown_table(Table("t", pd.DataFrame({"node": ["a|b"], "mean_ms": [1.5]})))
    assert lines[2] == "| node | mean (ms) |"
    assert lines[4] == "| a\\|b | 1.5 |"


def test_report_of_a_run_given_by_relative_path(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `benchfs run` names its results dir relative to the cwd ("results/...").
    monkeypatch.chdir(run_dir.parent.parent)
    files = write_report(run_dir.relative_to(run_dir.parent.parent))
    assert files.plots and all(path.is_file() for path in files.plots)
    assert "plots/latency_cdf.png" in files.markdown.read_text()
