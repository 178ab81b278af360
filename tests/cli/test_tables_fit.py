"""Every table of `benchfs analyze`, `benchfs compare` and `benchfs analyze
phases` in an 80- and a 120-column terminal: no line wider, nothing cut,
every figure of every table whole (read from the same command's --csv, as
the table formats it) and every header word whole."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pandas as pd
import pytest
from analysis_support import REPO, build_run, fio_text, iostat_text, run_dir
from table_checks import assert_fits
from test_analyze import BW, _summary_run
from typer.testing import CliRunner

from analysis.reports.columns import cell, header
from benchfs.cli.main import app
from benchfs.cli.tables import _FIGURE

__all__ = ["fio_text", "iostat_text", "run_dir"]  # fixtures used below

runner = CliRunner()
WIDTHS = (80, 120)
OUTPUTS = REPO / "tests" / "analysis" / "data" / "tool-outputs"


def _invoke(width: int, *args: str) -> str:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout


def _csv_tables(text: str) -> list[pd.DataFrame]:
    """The tables of a command's --csv output (``# title`` then CSV)."""
    sections = [part for part in re.split(r"^# .*$", text, flags=re.MULTILINE) if part.strip()]
    return [pd.read_csv(io.StringIO(section.strip())) for section in sections]


def _expected(tables: list[pd.DataFrame]) -> tuple[list[str], list[str]]:
    """The figures the tables show (as ``cell`` formats them) and their headers."""
    figures = [
        text
        for frame in tables
        for column in frame.columns
        for text in map(cell, frame[column])
        if _FIGURE.match(text)
    ]
    headers = [header(str(column)) for frame in tables for column in frame.columns]
    return figures, headers


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(
    ("command", "extra"),
    [("io-depth", ["--by-node"]), ("latency", ["--by-node"]), ("rpc", [])],
)
def test_analyze_tables_fit(run_dir: Path, width: int, command: str, extra: list[str]) -> None:
    args = ["analyze", command, str(run_dir / "traces"), *extra]
    figures, headers = _expected(_csv_tables(_invoke(width, *args, "--csv")))
    assert len(figures) > 20
    assert_fits(_invoke(width, *args, "--wide"), width, figures, headers)
    default = _invoke(width, *args)
    assert_fits(default, width)
    if command == "latency":
        assert "more column(s) with --wide: p95 (ms), errors (count)" in default


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(
    "output",
    ["ior_fpp_t256k_b8m_i2.txt", "mdtest_n300_dirs_and_files_i2.txt", "local/ior_stonewall.txt",
     "local/mdtest_n100_i2_P_rankstats_rankdetails.txt"],
)  # fmt: skip
def test_analyze_phases_fits(width: int, output: str) -> None:
    path = str(OUTPUTS / output)
    tables = _csv_tables(_invoke(width, "analyze", "phases", path, "--csv"))
    figures, headers = _expected(tables[:1])  # the phases; the tool outputs' table is text
    printed = _invoke(width, "analyze", "phases", path)
    assert_fits(printed, width, figures, headers)
    assert "bwMaxMIB" in printed if output.startswith(("ior", "local/ior")) else "rate" in printed


def test_an_ior_output_reads_one_column_per_phase_at_80_columns() -> None:
    printed = _invoke(80, "analyze", "phases", str(OUTPUTS / "ior_fpp_t256k_b8m_i2.txt"))
    lines = printed.splitlines()
    # what every phase shares is said once, the figures of the two phases side by side
    assert "same in every row: tool = ior, queue depth = 1, access = file-per-process" in printed
    row = next(line for line in lines if line.startswith("write "))
    assert row.split()[1] == "1,259"
    assert next(line for line in lines if line.startswith("read ")).split()[1] == "33,404"


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_fits_and_says_the_shared_verdict_once(
    run_dir: Path, tmp_path: Path, iostat_text: str, fio_text: str, width: int
) -> None:
    other = build_run(tmp_path / "other", iostat_text, fio_text, slow_nodes=(), bw=2000.0,
                      config={"storage": {"fsync": "never"}})  # fmt: skip
    args = ["compare", str(run_dir), str(other)]
    printed = _invoke(width, *args)
    # 1 repetition a run: one verdict for every row, said once
    assert printed.count("no noise estimate (1 repetition)") == 1, printed
    assert "same in every row: verdict = no noise estimate (1 repetition)" in printed
    figures = ["1,000", "2,000", "1,100", "2,200", "222", "444", "100"]
    assert_fits(printed, width, figures, ["phase", "metric", "change (%)"])
    assert_fits(_invoke(width, *args, "--wide"), width, figures, ["reps A/B", "95% CI (%)"])


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_with_repetitions_fits_with_every_column(tmp_path: Path, width: int) -> None:
    a = _summary_run(tmp_path / "a", BW)
    b = _summary_run(tmp_path / "b", [x / 10 for x in BW])
    printed = _invoke(width, "compare", str(a), str(b), "--wide")
    # changed rows and within-noise rows: the verdict stays a column
    assert "changed (worse)" in printed and "within noise" in printed
    figures = ["100", "10", "-90", "5/5", "1,603"]
    assert_fits(printed, width, figures, ["95% CI (%)", "reps needed", "verdict"])
    intervals = re.findall(r"-9\d(?:\.\d+)? \.\. -\d+(?:\.\d+)?", printed)
    assert intervals, printed  # an interval whole on its line


def test_an_unknown_column_is_one_line_naming_the_columns(run_dir: Path) -> None:
    result = runner.invoke(
        app, ["analyze", "latency", str(run_dir / "traces"), "--columns", "p42 (ms)"]
    )
    assert result.exit_code == 2
    assert "no column 'p42 (ms)'; columns: count (ops)" in result.output
