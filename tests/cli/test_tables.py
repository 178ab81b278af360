"""The table fitting every command uses: a table fits its terminal, figures
and names whole, headers wrapped between words, wide columns on request,
split or transposed when the columns do not fit."""

from __future__ import annotations

import pytest
import typer
from rich.console import Console
from table_checks import assert_fits

from benchfs.cli.tables import Column, Grid, View, print_grid

HEADERS = ["phase", "tool", "queue_depth", "bwMaxMIB (MiB/s)", "bwMinMIB (MiB/s)",
           "bwMeanMIB (MiB/s)", "OPsMean (ops/s)", "MeanTime (s)", "xsizeMiB (MiB)",
           "p50 (us)", "p99 (us)", "p99.9 (us)"]  # fmt: skip
ROWS = [
    ["write", "ior", "1", "13,010", "12,001", "12,500.5", "12,500", "1.23", "8,192", "655",
     "1,234", "98,765.4"],
    ["read", "ior", "1", "10,010", "9,001", "9,500.5", "9,500", "1.53", "8,192", "855",
     "2,234", "123,456"],
]  # fmt: skip
FIGURES = [cell for row in ROWS for cell in row[3:]]


def _printed(grid: Grid, width: int, view: View | None = None) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    print_grid(console, grid, view)
    return console.export_text()


@pytest.mark.parametrize(("width", "parts"), [(80, 2), (120, 1)])
def test_a_wide_table_splits_and_repeats_its_key_column(width: int, parts: int) -> None:
    out = _printed(Grid.of("Data phases", HEADERS, ROWS), width)
    assert_fits(out, width, FIGURES, HEADERS)
    titles = [line.strip() for line in out.splitlines() if line.startswith("Data phases")]
    assert titles == (
        ["Data phases"] if parts == 1 else [f"Data phases ({i} of {parts})" for i in (1, 2)]
    )
    # every part names its rows
    named = [line.split()[0] for line in out.splitlines() if "," in line]
    assert named == ["write", "read"] * parts


def test_a_table_that_fits_is_one_table_with_whole_headers_on_one_line() -> None:
    out = _printed(Grid.of("Data phases", HEADERS[:5], [r[:5] for r in ROWS]), 120)
    assert "(1 of" not in out
    assert "bwMaxMIB (MiB/s)" in out and "queue_depth" in out


def test_transposed_when_it_fits_and_the_rows_do_not() -> None:
    grid = Grid.of("Data phases", HEADERS, ROWS, transpose=True)
    out = _printed(grid, 80)
    assert_fits(out, 80, FIGURES, HEADERS)
    lines = out.splitlines()
    header = next(line for line in lines if "write" in line)
    assert header.split() == ["phase", "write", "read"]
    row = next(line for line in lines if line.startswith("p99.9 (us)"))
    assert row.split()[-2:] == ["98,765.4", "123,456"]
    # wide enough for the rows: not turned
    assert "p99.9" in _printed(grid, 200).splitlines()[1]


def test_wide_columns_wait_for_wide_and_are_named() -> None:
    grid = Grid.of("Data phases", HEADERS, ROWS, wide=("p99.9 (us)", "xsizeMiB (MiB)"))
    out = _printed(grid, 200)
    assert "123,456" not in out and "p99.9" not in out.splitlines()[1]
    assert "2 more column(s) with --wide: xsizeMiB (MiB), p99.9 (us)" in out
    everything = _printed(grid, 200, View(wide=True))
    assert "123,456" in everything and "more column" not in everything


def test_columns_names_what_to_show_after_the_keys() -> None:
    grid = Grid.of("Data phases", HEADERS, ROWS, wide=("p99.9 (us)",))
    out = _printed(grid, 80, View.of(columns="p99.9 (us),bwmeanmib (mib/s)"))
    assert out.splitlines()[1].split() == ["phase", "p99.9", "(us)", "bwMeanMIB", "(MiB/s)"]
    assert "more column" not in out
    body = [line.split() for line in out.splitlines() if line.startswith(("write", "read"))]
    assert body == [["write", "98,765.4", "12,500.5"], ["read", "123,456", "9,500.5"]]


def test_a_column_no_table_has_is_an_error_naming_the_columns() -> None:
    view = View.of(columns="p42,tool")
    out = _printed(Grid.of("Data phases", HEADERS, ROWS), 80, view)
    assert out.splitlines()[1].split() == ["phase", "tool"]
    with pytest.raises(typer.BadParameter, match="no column 'p42'; columns: tool, queue_depth"):
        view.check()
    # a table without any named column shows its default columns
    other = _printed(Grid.of("nodes", ["node", "bw"], [["n1", "5"]]), 80, View.of(columns="tool"))
    assert other.splitlines()[1].split() == ["node", "bw"]


def test_text_wraps_between_words_beside_whole_figures() -> None:
    reason = "read p99 3.2x the median of the nodes, and beyond the limit of 50 ms " * 2
    grid = Grid("nodes", [Column("node", key=True), Column("bw (MiB/s)"),
                          Column("flagged", kind="text")])  # fmt: skip
    grid.add_row("node01", "1,234,567", reason.strip())
    out = _printed(grid, 60)
    assert_fits(out, 60, ["1,234,567", "node01"], ["bw (MiB/s)", "flagged"])
    lines = out.splitlines()
    body = lines[lines.index(next(line for line in lines if line.startswith("node01"))) :]
    assert len(body) > 1  # wrapped
    column = body[0].index("read")
    assert " ".join(line[column:] for line in body).split() == reason.split()


def test_figures_right_names_left() -> None:
    grid = Grid.of("t", ["node", "bw (MiB/s)"], [["n1", "5"], ["node-long", "1,000"]])
    lines = [line.rstrip() for line in _printed(grid, 80).splitlines() if line.strip()]
    assert lines[-2:] == ["n1                  5", "node-long       1,000"]
    assert [column.kind for column in grid.columns] == ["infer", "infer"]
