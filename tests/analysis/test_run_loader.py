"""A whole results directory into RunData: required parts, optional parts, tool output."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from analysis_support import engine_trace_support

from analysis.errors import DataFormatError, MissingDataError
from analysis.loaders.run import load_run, load_workload_repetitions, load_workload_summary

DATA = Path(__file__).parent / "data"


def test_complete_run(run_dir: Path) -> None:
    run = load_run(run_dir)
    assert run.label == "20261122T160000Z-test"
    assert run.config["storage"]["fsync"] == "on_close"
    assert list(run.workload["phase"]) == ["write", "read"]
    assert run.traces is not None and run.traces.nodes == ["node00", "node01", "node02", "node03"]
    assert run.traces.event_count >= 40_000
    if engine_trace_support() is None:  # the engine's own trace is loaded beside the others
        assert "store" in {header.process for header in run.traces.headers}
    assert run.iostat is not None
    assert set(run.iostat["node"]) == {"node00", "node03"}
    assert {"r_await_ms", "w_await_ms", "time_ns"} <= set(run.iostat.columns)
    assert run.iostat["time_ns"].notna().all()  # ISO timestamps from the real iostat
    assert abs(int(run.iostat["time_ns"].iloc[0]) - time.time_ns()) < 3600 * 10**9
    assert run.preflight is not None and set(run.preflight["node"]) == {"node00"}
    assert run.preflight["bw_MiB_s"].iloc[0] > 0
    assert run.absent == ["workload per-rank rows"]
    assert run.notes == []


def test_optional_parts_may_be_absent(run_dir: Path) -> None:
    shutil.rmtree(run_dir / "iostat")
    shutil.rmtree(run_dir / "traces")
    shutil.rmtree(run_dir / "preflight")
    (run_dir / "workload" / "ranks.csv").write_text("rank,node,phase,seconds\n0,node00,write,1.5\n")
    run = load_run(run_dir)
    assert run.traces is None and run.iostat is None and run.preflight is None
    assert run.absent == ["traces/", "iostat/", "preflight/"]
    assert run.ranks is not None and run.ranks["seconds"].iloc[0] == 1.5


def test_missing_required_parts_are_named(run_dir: Path) -> None:
    (run_dir / "manifest.json").unlink()
    (run_dir / "workload" / "summary.json").unlink()
    with pytest.raises(MissingDataError, match=r"lacks manifest\.json, workload/summary\.json"):
        load_run(run_dir)
    with pytest.raises(MissingDataError, match="not a results directory"):
        load_run(run_dir / "nothing")


def test_corrupt_manifest_names_the_line(run_dir: Path) -> None:
    (run_dir / "manifest.json").write_text('{\n  "label": "x",\n  oops\n}')
    with pytest.raises(DataFormatError, match=r"manifest\.json.*line 3"):
        load_run(run_dir)


def test_corrupt_tool_output_fails_or_is_skipped(run_dir: Path) -> None:
    (run_dir / "iostat" / "node00.json").write_text('{"sysstat": {"hosts": [')
    with pytest.raises(DataFormatError, match=r"node00\.json"):
        load_run(run_dir)
    run = load_run(run_dir, allow_partial=True)
    assert run.iostat is not None and set(run.iostat["node"]) == {"node03"}
    assert any("node00.json: skipped" in note for note in run.notes)


def test_damaged_trace_with_allow_partial_reports_the_loss(run_dir: Path) -> None:
    trace = sorted((run_dir / "traces").glob("*.bftrace"))[0]
    trace.write_bytes(trace.read_bytes()[:-7])
    with pytest.raises(DataFormatError, match="truncated"):
        load_run(run_dir)
    run = load_run(run_dir, allow_partial=True)
    assert len(run.notes) == 1 and "dropped 41 bytes" in run.notes[0]


@pytest.mark.parametrize(
    "document",
    [
        {"phases": [{"phase": "write", "bwMeanMIB": 5}]},
        [{"operation": "write", "bwMeanMIB": 5}],
        {"write": {"bwMeanMIB": 5}},
    ],
)
def test_workload_summary_shapes(tmp_path: Path, document: object) -> None:
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(document))
    frame = load_workload_summary(path)
    assert frame["phase"].tolist() == ["write"] and frame["bwMeanMIB"].tolist() == [5]


def test_workload_summary_may_be_ior_output(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    shutil.copy(DATA / "ior-3.3.0-posix.txt", path)
    frame = load_workload_summary(path)
    assert frame["phase"].tolist() == ["write", "read"]
    assert frame["bwMeanMIB"].iloc[0] == 1000.0
    # IOR's per-repetition Results are the repetitions, their access the phase
    repetitions = load_workload_repetitions(path)
    assert repetitions is not None
    assert repetitions["phase"].tolist() == ["write", "read", "write", "read"]
    assert repetitions["bwMiB"].iloc[2] == 750.0


def test_workload_repetitions_as_benchfs_writes_them(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    rows = [{"phase": "write", "repetition": r, "bwMiB": 100.0 + r} for r in range(3)]
    path.write_text(json.dumps({"phases": [{"phase": "write"}], "repetitions": rows}))
    repetitions = load_workload_repetitions(path)
    assert repetitions is not None and repetitions["bwMiB"].tolist() == [100.0, 101.0, 102.0]
    path.write_text(json.dumps({"phases": [{"phase": "write"}]}))
    assert load_workload_repetitions(path) is None
    path.write_text(json.dumps({"phases": [], "repetitions": [{"bwMiB": 1.0}]}))
    with pytest.raises(DataFormatError, match="neither 'phase' nor 'access'"):
        load_workload_repetitions(path)


def test_tool_output_in_per_node_directories_and_embedded_documents(
    run_dir: Path, fio_text: str, iostat_text: str
) -> None:
    # <part>/<node>/<step>.fio.json: the directory names the node
    (run_dir / "preflight" / "node02").mkdir()
    (run_dir / "preflight" / "node02" / "randread.fio.json").write_text(fio_text)
    (run_dir / "iostat" / "raw").mkdir()
    (run_dir / "iostat" / "raw" / "node01.iostat.json").write_text(iostat_text)
    # a document that only embeds fio's output is not fio output
    embedded = json.dumps({"node": "node03", "fio": json.loads(fio_text[fio_text.index("{") :])})
    (run_dir / "preflight" / "node03.json").write_text(embedded)
    run = load_run(run_dir)
    assert run.preflight is not None and run.iostat is not None
    assert sorted(set(run.preflight["node"])) == ["node00", "node02"]
    assert "node02/randread.fio.json" in set(run.preflight["source"])
    assert sorted(set(run.iostat["node"])) == ["node00", "node01", "node03"]
