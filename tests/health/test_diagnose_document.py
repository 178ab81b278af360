"""A diagnose document as ``benchfs diagnose`` writes it validates into its one
model, reads back to the same text, and a bad field is refused by name."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from analysis.diagnose import DiagnoseDocument, DiagnoseFormatError
from analysis.loaders.diagnose import parse_diagnose_json
from benchfs.health.diagnose import build_report
from benchfs.health.model import NodeMeasurement, TestResult
from benchfs.health.report import to_json, write_reports
from benchfs.health.thresholds import Thresholds
from benchfs.launchers.programs import PreflightArgs, diagnose_argv


def _written(text: str) -> str:
    """The document's text again from its model."""
    return json.dumps(DiagnoseDocument.read(json.loads(text), "test").model_dump(), indent=2)


@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
def test_a_worker_s_document_of_one_node_validates_and_reads_back_as_written(
    tmp_path: Path,
) -> None:
    preflight = PreflightArgs(transfer_size=65536, files=2, file_size=1 << 20, runtime_s=0.5)
    argv = diagnose_argv(tmp_path, "n7", preflight=preflight)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    document = DiagnoseDocument.read(json.loads(done.stdout), "worker output")
    (node,) = document.nodes
    assert node.node == "n7" and node.measurement.error is None
    assert [test.name for test in node.measurement.tests] == ["preflight_write", "preflight_read"]
    assert (node.measurement.metric("preflight_read", "read_bw_MiB_s") or 0.0) > 0
    assert _written(done.stdout) == done.stdout.strip()


def test_a_report_of_several_nodes_validates_and_reads_back_as_written(tmp_path: Path) -> None:
    tests = (TestResult("seq_read_direct", "Sequential read", {"read_bw_MiB_s": 1800.0}),)
    nodes = [
        NodeMeasurement(name, name, f"/scratch/{name}", True, "t0", tests=tests)
        for name in ("a", "b", "c")
    ]
    gone = NodeMeasurement("gone", "", "/scratch/gone", True, "t0", error="fio not found")
    report = build_report(tmp_path, [*nodes, gone], Thresholds(), quick=True, started_at="t0")
    _, path = write_reports(report, tmp_path / "out")
    text = path.read_text()
    document = DiagnoseDocument.read(json.loads(text), str(path))
    assert document.preflight_policy is not None and document.preflight_policy.excluded == ("gone",)
    assert isinstance(json.loads(text)["thresholds"]["min_nodes"], int)  # counts stay whole
    assert _written(text) + "\n" == text == to_json(report) + "\n"


def _bad(document: dict[str, Any]) -> dict[str, Any]:
    document["nodes"][0]["measurement"]["tests"][0]["metrics"]["read_bw_MiB_s"] = "fast"
    return document


def test_a_document_with_a_bad_field_is_refused_naming_the_file_and_the_field(
    tmp_path: Path,
) -> None:
    tests = (TestResult("seq_read_direct", "Sequential read", {"read_bw_MiB_s": 1800.0}),)
    node = NodeMeasurement("a", "a", "/scratch/a", True, "t0", tests=tests)
    report = build_report(tmp_path, [node], Thresholds(), quick=True, started_at="t0")
    bad = json.dumps(_bad(json.loads(to_json(report))))
    field = "nodes.0.measurement.tests.0.metrics.read_bw_MiB_s"
    with pytest.raises(DiagnoseFormatError) as raised:
        DiagnoseDocument.read(json.loads(bad), "node0.json")
    message = str(raised.value)
    assert message.startswith("node0.json: not a benchfs-diagnose document: " + field + ": ")
    assert "valid number" in message and "\n" not in message
    with pytest.raises(DiagnoseFormatError, match=field):
        parse_diagnose_json(bad, "node0.json")
    unknown = {**json.loads(to_json(report)), "verdict": "fine"}
    with pytest.raises(DiagnoseFormatError, match="verdict: Extra inputs are not permitted"):
        DiagnoseDocument.read(unknown, "node0.json")
