"""`benchfs nodes` and `benchfs history` in an 80- and a 120-column terminal:
no line wider, nothing cut, every figure of their tables and every header
word whole; --wide shows the verdict behind each figure, --columns picks."""

from __future__ import annotations

import pytest
from table_checks import assert_fits
from test_history_status import field_history
from typer.testing import CliRunner

from benchfs.cli.main import app
from benchfs.history.views import (
    NODE_HEADERS,
    RUN_HEADERS,
    TREND_HEADERS,
    TREND_WIDE,
    VERDICT_HEADERS,
)

runner = CliRunner()
WIDTHS = (80, 120)
# The worst figure of every node of the field reports' history.
WORST = ["894 ms", "3,161 ms", "842 ms", "188 ms", "68.6 ms", "596 ms", "2,684 ms", "4,340 ms"]


def _invoke(width: int, *args: str) -> str:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("history") / "h.sqlite"
    field_history(path)
    return str(path)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_node_table_fits(url: str, width: int) -> None:
    shown = _invoke(width, "nodes", "--url", url)
    assert_fits(shown, width, figures=WORST, headers=NODE_HEADERS)
    assert "3 more column(s) with --wide: metric, layer, pattern" in shown
    wide = _invoke(width, "nodes", "--url", url, "--wide")
    assert_fits(wide, width, figures=[*WORST, "read storage op mean"],
                headers=[*NODE_HEADERS, *VERDICT_HEADERS])  # fmt: skip
    # 80 columns split the wide table into two parts that repeat the node.
    assert ("(2 of 2)" in wide) == (width == 80)
    rows = [line.split() for line in wide.splitlines() if line.startswith("bnode026")]
    assert ["bnode026", "read", "storage", "op", "mean", "device", "whole", "run"] in [
        row[:1] + row[-7:] for row in rows
    ]


@pytest.mark.parametrize("width", WIDTHS)
def test_one_nodes_runs_fit(url: str, width: int) -> None:
    shown = _invoke(width, "nodes", "--url", url, "--node", "bnode026", "--wide")
    assert_fits(shown, width, figures=["12.9", "894 ms", "179 ms", "whole run"],
                headers=[*RUN_HEADERS, *VERDICT_HEADERS])  # fmt: skip
    picked = _invoke(width, "nodes", "--url", url, "--node", "bnode026", "--columns", "layer")
    assert_fits(picked, width, headers=("started", "layer"))
    table = picked.split("\n\n")[0]  # the reason lines follow
    assert [line.split() for line in table.splitlines() if line.startswith("01-16")] == [
        ["01-16", "09:53", "-"], ["01-16", "23:07", "device"], ["01-16", "23:44", "device"],
    ]  # fmt: skip


@pytest.mark.parametrize("width", WIDTHS)
def test_the_trend_table_fits(url: str, width: int) -> None:
    headers = [h for h in TREND_HEADERS if h != "mean"]
    shown = _invoke(width, "history", "--url", url)
    assert_fits(shown, width, figures=["9,890", "77.5", "+0.0%"], headers=headers)
    wide = _invoke(width, "history", "--url", url, "--wide")
    assert_fits(wide, width, figures=["9,890", "77.5", "+0.0%", "ior-0", "ior-2"],
                headers=[*headers, *TREND_WIDE])  # fmt: skip
    assert "2 more column(s) with --wide: run, reps" in shown and "more column" not in wide


def test_a_column_no_table_has_is_named(url: str) -> None:
    result = runner.invoke(app, ["nodes", "--url", url, "--columns", "nope"])
    assert result.exit_code == 2
    assert "no column 'nope'" in result.output
