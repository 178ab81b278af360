"""A directory of tool outputs that `benchfs run` did not make, read as a run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tool_outputs_support import copy_outputs, output

from analysis.convert.summary import summarize_outputs
from analysis.errors import DataFormatError, MissingDataError
from analysis.loaders.run import load_workload_summary
from analysis.loaders.tools import load_tool_output
from analysis.phases import MetadataPhase
from analysis.sources.results import load_phase_source, load_results
from analysis.sources.tool_dir import load_tool_dir, load_tool_outputs


def test_files_found_by_content_not_by_name(tmp_path: Path) -> None:
    shutil.copy(output("ior_fpp_t256k_b8m_i2.json"), tmp_path / "results.log")
    shutil.copy(output("mdtest_n500_F_u.txt"), tmp_path / "job-1234.out")
    shutil.copy(output("ior_fpp_t256k_b8m_i2.json.stdout"), tmp_path / "ior.json")
    run = load_tool_dir(tmp_path)
    # in the order of the file names: job-1234.out, then results.log
    assert list(run.workload["phase"]) == [
        "File creation",
        "File stat",
        "File read",
        "File removal",
        "Tree creation",
        "Tree removal",
        "write",
        "read",
    ]
    assert list(run.workload["tool"]) == ["mdtest"] * 6 + ["ior"] * 2
    assert run.manifest["ignored_files"] == ["ior.json"]
    assert run.manifest["tools"] == "ior, mdtest" and run.label == tmp_path.name
    assert "traces/" in run.absent and "workload per-rank rows" in run.absent
    outputs = {entry["file"]: entry for entry in run.manifest["tool_outputs"]}
    assert outputs["results.log"]["format"] == "IOR JSON"
    assert outputs["job-1234.out"]["command_line"].startswith("/opt/ior/bin/mdtest -n 500")


def test_companion_files_join_their_run(tmp_path: Path) -> None:
    copy_outputs(
        tmp_path,
        "mdtest_n200_F_rankdetails.stdout",
        "mdtest_n200_F_rankdetails.csv",
        "local/mdtest_n100_F_w3901_perop.txt",
        *(f"local/per op-File {p}-0000{r}.csv" for p in ("stat", "read") for r in (0, 1)),
    )
    run = load_tool_dir(tmp_path)
    phases = run.workload.set_index("phase")
    # two mdtest runs: every phase is named with its file
    stat = phases.loc["File stat (mdtest_n100_F_w3901_perop.txt)"]
    assert stat["latency_ops"] == 200 and stat["p50_us"] > 0
    assert pd_isnull(phases.loc["File creation (mdtest_n100_F_w3901_perop.txt)", "p50_us"])
    assert pd_isnull(phases.loc["File stat (mdtest_n200_F_rankdetails.stdout)", "p50_us"])
    assert run.ranks is not None and set(run.ranks["source"]) == {"mdtest_n200_F_rankdetails.csv"}
    assert len(run.ranks) == 8
    used = {e["file"]: e.get("used_as") for e in run.manifest["tool_outputs"]}
    assert (
        used["mdtest_n200_F_rankdetails.csv"] == "per-rank rows of mdtest_n200_F_rankdetails.stdout"
    )
    assert used["per op-File read-00001.csv"] == "latency of mdtest_n100_F_w3901_perop.txt"


def test_companions_alone(tmp_path: Path) -> None:
    copy_outputs(tmp_path, "mdtest_n200_F_rankdetails.csv", "local/per op-File stat-00000.csv")
    run = load_tool_dir(tmp_path)
    phases = run.workload.set_index("phase")
    assert phases.loc["File creation", "rate_mean_ops_s"] == pytest.approx(1943.8232241)
    stat = phases.loc[["File stat" in name for name in phases.index]]
    assert len(stat) == 2  # the rank-details row and the per-op latency row, apart
    assert stat["latency_ops"].max() == 100


def test_phases_named_alike_are_told_apart_by_file(tmp_path: Path) -> None:
    copy_outputs(tmp_path, "ior_fpp_t256k_b8m_i2.json", "ior_fpp_t256k_b8m_i2.txt")
    summary = summarize_outputs(load_tool_outputs(tmp_path).outputs, tmp_path)
    assert [row["phase"] for row in summary.phases] == [
        "write (ior_fpp_t256k_b8m_i2.json)",
        "read (ior_fpp_t256k_b8m_i2.json)",
        "write (ior_fpp_t256k_b8m_i2.txt)",
        "read (ior_fpp_t256k_b8m_i2.txt)",
    ]
    assert summary.repetitions[0]["phase"] == "write (ior_fpp_t256k_b8m_i2.json)"


def test_the_document_is_a_workload_summary(tmp_path: Path) -> None:
    source = copy_outputs(tmp_path / "outputs", "ior_fpp_t256k_b8m_i2.txt", "mdtest_n500_F_u.txt")
    document = load_phase_source(source).document
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(document))
    frame = load_workload_summary(path)
    assert list(frame["kind"]) == ["data"] * 2 + ["metadata"] * 6
    metadata = [row for row in document["phases"] if row["kind"] == "metadata"]
    assert MetadataPhase.from_row(metadata[0]).rate_max_ops_s == 9538.514
    assert document["summary_version"] == 1 and len(document["tool_outputs"]) == 2


def test_bad_files_name_themselves(tmp_path: Path) -> None:
    with pytest.raises(MissingDataError, match="holds no IOR, mdtest or fio output"):
        load_tool_dir(tmp_path)
    with pytest.raises(MissingDataError, match="no such directory"):
        load_tool_dir(tmp_path / "absent")
    copy_outputs(tmp_path, "mdtest_n500_F_u.txt")
    text = output("ior_fpp_t256k_b8m_i2.txt").read_text()
    (tmp_path / "cut.txt").write_text(text[: text.index("Summary of all tests:")])
    with pytest.raises(DataFormatError, match=r"cut\.txt: IOR text output ends before its summary"):
        load_tool_dir(tmp_path)
    run = load_tool_dir(tmp_path, allow_partial=True)
    assert len(run.workload) == 6
    assert len(run.notes) == 1 and "cut.txt" in run.notes[0]


def test_results_directories_still_load_as_runs(run_dir: Path, tmp_path: Path) -> None:
    run = load_results(run_dir)
    assert run.traces is not None and "tool_outputs" not in run.manifest
    copy_outputs(tmp_path, "mdtest_n500_F_u.txt")
    assert load_results(tmp_path).manifest["source"].startswith("tool outputs")


def pd_isnull(value: object) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def test_truncated_fio_json_names_line_and_column(tmp_path: Path, fio_text: str) -> None:
    cut = tmp_path / "fio.json"
    cut.write_text(fio_text[: len(fio_text) // 2])
    where = r"fio\.json: corrupt fio JSON.*at line \d+ column \d+"
    with pytest.raises(DataFormatError, match=where):
        load_tool_output(cut)
