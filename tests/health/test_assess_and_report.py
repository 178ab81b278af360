"""Assessment and report writing on given figures (the real runs are in the other tests)."""

from __future__ import annotations

import json
from pathlib import Path

from benchfs.health.assess import assess_node, exit_code
from benchfs.health.diagnose import build_report
from benchfs.health.model import NodeMeasurement, TestResult
from benchfs.health.report import render_markdown, write_reports
from benchfs.health.thresholds import Thresholds


def _node(name: str, read_bw: float, **extra: object) -> NodeMeasurement:
    tests = (
        TestResult("seq_write_direct", "Sequential write", {"write_bw_MiB_s": 2000.0}),
        TestResult(
            "seq_read_direct",
            "Sequential read",
            {"read_bw_MiB_s": read_bw, "read_p50_ns": 1e6, "read_p99_ns": 2e6},
            {"r_await_ms": 1.0, "w_await_ms": 0.0, "util_pct": 50.0, "aqu_sz": 2.0},
        ),
        TestResult(
            "metadata",
            "Metadata",
            {"create_ops_s": 9000.0, "stat_ops_s": 90000.0, "delete_ops_s": 9000.0},
        ),
    )
    fields: dict = {"tests": tests, **extra}
    return NodeMeasurement(name, name, f"/scratch/{name}", True, "2026-01-01T00:00:00+00:00",
                           **fields)  # fmt: skip


def test_measurement_survives_json() -> None:
    node = _node("n1", 1800.0, filesystem={"network": False}, filesystem_text="on ext4")
    again = NodeMeasurement.from_dict(json.loads(json.dumps(node.to_dict())), "test")
    assert again == node


def test_lopsided_node_reads_are_named_with_figures() -> None:
    findings = assess_node(_node("n1", 20.0), Thresholds())
    kinds = {(f.kind, f.level) for f in findings}
    assert ("asymmetry", "degraded") in kinds and ("limit", "degraded") in kinds
    (asym,) = [f for f in findings if f.kind == "asymmetry"]
    assert asym.message.startswith("O_DIRECT reads (20.0 MiB/s) are 100.0x slower than writes")
    assert asym.value == 100.0 and asym.limit == 16.0


def test_network_file_system_is_said_plainly() -> None:
    text = "/data is on a NETWORK file system (nfs4) served by 10.0.0.3, export x"
    node = _node("n1", 1800.0, filesystem={"network": True}, filesystem_text=text)
    (finding,) = assess_node(node, Thresholds())
    assert (finding.kind, finding.level, finding.message) == ("network", "warn", text)


def test_report_of_several_nodes(tmp_path: Path) -> None:
    gone = NodeMeasurement("gone", "", "/scratch/gone", True, "x", error="fio not found")
    nodes = [_node("a", 1800.0), _node("b", 1900.0), _node("c", 2000.0), _node("sick", 5.0), gone]
    report = build_report(tmp_path, nodes, Thresholds(), quick=True, started_at="t0")
    assert report.exit_code == 2 == exit_code(report.assessments)
    assert report.policy is not None and report.policy.excluded == ("gone", "sick")
    markdown = render_markdown(report)
    assert "**Verdict: ERROR** (exit code 2)" in markdown
    assert "| node | status | seq wr MiB/s | seq rd MiB/s |" in markdown
    assert "| sick | DEGRADED | 2,000 | 5 |" in markdown
    assert (
        "cross-node outlier: seq_read_direct.read_bw_MiB_s = 5 on sick is 380.0x lower than "
        "the median of the other nodes (1,900;" in markdown
    )
    assert "A preflight would exclude: **gone, sick**" in markdown
    assert "Could not run: fio not found" in markdown
    assert "| test | read MiB/s | write MiB/s | IOPS (metadata: create/stat/delete per s)" in (
        markdown
    )
    assert "| metadata | - | - | 9,000 / 90,000 / 9,000 |" in markdown
    md_path, json_path = write_reports(report, tmp_path / "out")
    assert md_path.read_text() == markdown
    document = json.loads(json_path.read_text())
    assert [n["status"] for n in document["nodes"]] == [
        "healthy", "healthy", "healthy", "degraded", "error",
    ]  # fmt: skip
    assert document["preflight_policy"]["excluded"] == ["gone", "sick"]
