"""IOR JSON with its real quirks.

Real outputs of IOR 4.1 are in data/tool-outputs. The fixtures in data/
reproduce the layout IOR 3.3 and 4.0 print with ``-O summaryFormat=JSON``
(from IOR's ior-output.c: ", \\n" separators, ``%.4f`` doubles that print
``inf`` and ``-nan`` for zero times, repeated keys in summary entries,
warnings before and MPI help messages after the document).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from tool_outputs_support import output

from analysis.errors import DataFormatError
from analysis.loaders.ior import load_ior_json, parse_ior_json

DATA = Path(__file__).parent / "data"


def test_ior_3_3_with_bare_inf_and_text_around() -> None:
    report = load_ior_json(DATA / "ior-3.3.0-posix.txt")
    assert report.version == "3.3.0"
    assert report.command_line.startswith("ior -a POSIX")
    assert report.finished == "Sun Nov 22 16:00:02 2026"
    assert list(report.summary["operation"]) == ["write", "read"]
    write = report.operation("write")
    assert write["bwMaxMIB"] == 1250.0 and write["bwMinMIB"] == 750.0
    assert write["bwMeanMIB"] == 1000.0 and write["OPsMean"] == 1000.0
    assert write["blockSize"] == 16777216  # a repeated key keeps its value
    read = report.operation("read")
    assert math.isinf(read["bwMaxMIB"]) and math.isnan(read["bwStdMIB"])
    assert read["bwMinMIB"] == 3200.0
    results = report.results
    assert len(results) == 4
    assert list(results["repetition"]) == [0, 0, 1, 1]
    assert list(results["access"]) == ["write", "read", "write", "read"]
    assert results["bwMiB"].iloc[2] == 750.0
    assert math.isinf(results["bwMiB"].iloc[1])
    assert report.parameters[0]["transferSize"] == 1048576


def test_ior_4_0_with_quoted_non_finite_numbers() -> None:
    report = load_ior_json(DATA / "ior-4.0.0-quoted.txt")
    read = report.operation("read")
    assert math.isinf(read["bwMaxMIB"]) and math.isinf(read["bwMinMIB"])
    assert math.isnan(read["bwStdMIB"]) and math.isnan(read["OPsSD"])
    assert report.operation("write")["OPsMean"] == 23040.0
    assert set(report.results["access"]) == {"write", "read", "remove"}
    assert math.isinf(report.results.set_index("access").loc["read", "iops"])
    assert report.results.set_index("access").loc["write", "latency"] == 0.0001


def test_missing_operation_is_named() -> None:
    report = load_ior_json(DATA / "ior-4.0.0-quoted.txt")
    with pytest.raises(KeyError, match="no 'stat' operation"):
        report.operation("stat")


def test_corrupt_json_names_source_and_line() -> None:
    text = (
        (DATA / "ior-3.3.0-posix.txt").read_text().replace('"bwMinMIB": 750.0000', '"bwMinMIB" 7')
    )
    with pytest.raises(DataFormatError, match=r"run\.txt.*line 1\d\d column") as caught:
        parse_ior_json(text, "run.txt")
    assert "corrupt IOR JSON" in str(caught.value)


def test_text_without_json_or_summary() -> None:
    with pytest.raises(DataFormatError, match="no IOR JSON"):
        parse_ior_json("ior ERROR: open64() failed\n", "x")
    with pytest.raises(DataFormatError, match="no 'summary'"):
        parse_ior_json('{\n"Version": "3.3.0", "tests": []}\n', "x")


def test_real_summary_file_and_its_results() -> None:
    report = load_ior_json(output("ior_fpp_t256k_b8m_i2.json"))
    assert report.version == "4.1.0+dev" and report.format == "json"
    write = report.operation("write")
    assert write["bwMaxMIB"] == 1225.2180 and write["bwMinMIB"] == 1169.5107
    assert write["OPsSD"] == 111.4145 and write["xsizeMiB"] == 16.0
    # IOR 4.1 lists the repetitions flat: write, read, write, read
    assert list(report.results["repetition"]) == [0, 0, 1, 1]
    assert report.results["bwMiB"].iloc[3] == 36118.8719
    assert report.options[0]["access"] == "file-per-process"
    assert report.notes.warnings == () and report.notes.stonewall == ()


def test_json_on_stdout_with_stonewall_lines_inside_the_document() -> None:
    path = output("local/ior_stonewall_json_on_stdout.stdout")
    text = path.read_text()
    assert "WARNING: Maybe caused by deadlineForStonewalling\n, \n" in text  # inside the document
    report = load_ior_json(path)
    write = report.operation("write")
    assert write["StoneWallTime"] == 1.015 and write["StoneWallbwMeanMIB"] == 601.8296
    assert write["bwMeanMIB"] == 751.1264 and write["xsizeMiB"] == 1246.8281
    assert list(report.results["access"]) == ["write", "read", "write", "read"]
    notes = report.notes
    assert len(notes.stonewall) == 4 and notes.pairs_accessed == 159594
    first = notes.stonewall[0]
    assert (first.pairs_min, first.pairs_max, first.time_s) == (154758, 159594, 1.0)
    assert sum("Maybe caused by deadlineForStonewalling" in w for w in notes.warnings) == 4


def test_truncated_json_names_where_it_ends(tmp_path: Path) -> None:
    text = output("ior_fpp_t256k_b8m_i2.json").read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: text.index('"summary"')])
    with pytest.raises(DataFormatError, match=r"cut\.json: .*truncated output.*at line \d+"):
        load_ior_json(cut)


def test_wrong_tool_is_named() -> None:
    with pytest.raises(DataFormatError, match="looks like mdtest text output"):
        load_ior_json(output("mdtest_n500_F_u.txt"))
