"""IOR's CSV output: per-repetition rows, the summary recomputed IOR's way."""

from __future__ import annotations

from pathlib import Path

import pytest
from tool_outputs_support import output

from analysis.errors import DataFormatError
from analysis.loaders.ior_csv import load_ior_csv


def test_rows_and_recomputed_summary() -> None:
    report = load_ior_csv(output("local/ior_fpp_t256k_b8m_i2_csv.stdout"))
    assert report.format == "csv" and report.version == ""
    results = report.results
    assert list(results["access"]) == ["write", "read", "write", "read"]
    assert list(results["repetition"]) == [0, 0, 1, 1]
    assert list(results["numTasks"]) == [2, 2, 2, 2]
    write = report.operation("write")
    assert write["bwMaxMIB"] == 1049.8719 and write["bwMinMIB"] == 57.9441
    assert write["bwMeanMIB"] == pytest.approx((1049.8719 + 57.9441) / 2)
    # population standard deviation, as IOR
    assert write["bwStdMIB"] == pytest.approx((1049.8719 - 57.9441) / 2)
    # IOR's summary OPs are bandwidth over the transfer size, not the IOPS column
    assert write["OPsMax"] == pytest.approx(1049.8719 * 1024 / 256)
    assert write["MeanTime"] == pytest.approx((0.2761 + 0.0152) / 2)
    assert (write["transferSize"], write["blockSize"], write["repetitions"]) == (262144, 8388608, 2)


def test_stonewall_lines_between_rows() -> None:
    report = load_ior_csv(output("local/ior_shared_stonewall_csv.stdout"))
    assert list(report.results["access"]) == ["write", "read"]
    assert report.operation("read")["bwMeanMIB"] == 1472.7674
    assert [hit.pairs_min for hit in report.notes.stonewall] == [77122, 87934]
    assert report.notes.pairs_accessed == 248153
    assert len(report.notes.warnings) == 8


def test_cut_row_and_header_only(tmp_path: Path) -> None:
    text = output("local/ior_fpp_t256k_b8m_i2_csv.stdout").read_text()
    cut = tmp_path / "cut.csv"
    cut.write_text(text[: text.index("read,5174") + 20])
    with pytest.raises(DataFormatError, match=r"cut\.csv: IOR CSV row has 3 fields.*at line 5"):
        load_ior_csv(cut)
    cut.write_text(text.splitlines()[0] + "\n")
    with pytest.raises(DataFormatError, match="header but no result rows"):
        load_ior_csv(cut)


def test_wrong_tool() -> None:
    with pytest.raises(DataFormatError, match=r"not IOR CSV.*looks like mdtest rank-details CSV"):
        load_ior_csv(output("mdtest_n200_F_rankdetails.csv"))
