"""IOR's human-readable output: summary table, results rows, stonewall and -v lines."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from tool_outputs_support import output

from analysis.errors import DataFormatError
from analysis.loaders.ior import load_ior_json
from analysis.loaders.ior_model import summary_from_results
from analysis.loaders.ior_text import load_ior_text, parse_ior_text


def test_summary_table_under_iors_json_names() -> None:
    report = load_ior_text(output("ior_fpp_t256k_b8m_i2.txt"))
    assert report.version == "4.1.0+dev" and report.format == "text"
    assert report.command_line.endswith("-i 2 -o /scratch/job/a/testfile")
    assert report.began == report.finished == "Mon Nov 23 19:32:56 2026"
    write, read = report.operation("write"), report.operation("read")
    assert (write["bwMaxMIB"], write["bwMinMIB"], write["bwMeanMIB"]) == (1259.34, 1176.21, 1217.78)
    assert (write["bwStdMIB"], write["OPsSD"]) == (41.56, 166.25)  # the two StdDev columns
    assert read["OPsMean"] == 128460.84 and read["MeanTime"] == 0.0005
    assert (write["blockSize"], write["transferSize"], write["xsizeMiB"]) == (8388608, 262144, 16.0)
    assert (write["numTasks"], write["repetitions"], write["filePerProc"]) == (2, 2, 1)
    assert write["API"] == "POSIX"
    assert "StoneWallTime" not in report.summary.columns  # "NA": no stonewall, as in JSON
    # the same names as IOR's own JSON summary of the same command
    json_columns = set(load_ior_json(output("ior_fpp_t256k_b8m_i2.json")).summary.columns)
    assert set(report.summary.columns) == json_columns
    assert report.options[0]["ordering in a file"] == "sequential"


def test_results_rows_per_repetition() -> None:
    results = load_ior_text(output("ior_fpp_t256k_b8m_i2.txt")).results
    assert list(results["access"]) == ["write", "read", "write", "read"]
    assert list(results["repetition"]) == [0, 0, 1, 1]
    assert results["bwMiB"].iloc[0] == 1176.21 and results["totalTime"].iloc[3] == 0.000479
    # the summary recomputed from the rows is IOR's own (to its printed precision)
    again = summary_from_results(results).set_index("operation")
    assert again.loc["write", "bwStdMIB"] == pytest.approx(41.56, abs=0.01)
    assert again.loc["write", "OPsMin"] == pytest.approx(4704.85, abs=0.02)


def test_stonewall_columns_and_lines() -> None:
    report = load_ior_text(output("local/ior_stonewall.txt"))
    write = report.operation("write")
    assert write["StoneWallTime"] == 1.0 and write["StoneWallbwMeanMIB"] == 568.73
    assert write["blockSize"] == 1073741824 and write["xsizeMiB"] == 1364.5
    hits = report.notes.stonewall
    assert [(hit.pairs_min, hit.pairs_max) for hit in hits] == [(116541, 174661), (174661, 174661)]
    assert report.notes.pairs_accessed == 174661
    assert len(report.notes.warnings) == 8
    assert list(report.results["access"]) == ["write", "read"]


def test_verbose_remove_rows_and_max_lines() -> None:
    report = load_ior_text(output("local/ior_fpp_verbose.txt"))
    assert report.max_mib == {"write": 8508.26, "read": 18625.83}
    removes = report.results[report.results["access"] == "remove"]
    assert list(removes["totalTime"]) == [0.000722, 0.001]
    assert math.isnan(removes["bwMiB"].iloc[0])
    assert report.operation("read")["bwMinMIB"] == 11247.61


def test_failed_run_names_the_error_line() -> None:
    path = output("local/ior_failed_missing_dir.txt")
    with pytest.raises(DataFormatError, match=r"IOR run failed: ERROR: open64.*at line 33"):
        load_ior_text(path)


def test_truncated_output(tmp_path: Path) -> None:
    text = output("ior_fpp_t256k_b8m_i2.txt").read_text()
    cut = tmp_path / "cut.txt"
    cut.write_text(text[: text.index("Summary of all tests:")])
    with pytest.raises(
        DataFormatError, match=r"cut\.txt: .*'Summary of all tests:' table is missing"
    ):
        load_ior_text(cut)
    # cut inside a summary row
    cut.write_text(text[: text.index("read        33404.11") + 40])
    with pytest.raises(DataFormatError, match=r"has 4 fields where its header has 27.*at line 43"):
        load_ior_text(cut)


def test_wrong_tool_and_empty_file(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match=r"not IOR text output.*looks like IOR JSON output"):
        load_ior_text(output("ior_fpp_t256k_b8m_i2.json"))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    with pytest.raises(DataFormatError, match=r"empty\.txt: empty file.*at byte 0"):
        load_ior_text(empty)
    with pytest.raises(DataFormatError, match="no 'IOR-<version>:' banner"):
        parse_ior_text("Summary of all tests:\n", "x")
