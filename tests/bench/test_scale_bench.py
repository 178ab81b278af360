"""`benchfs bench scale` for real on two small cluster sizes, and its growth fit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchfs.bench.scale import STEPS, ScaleRow, fit, growth_of
from benchfs.cli.main import app

runner = CliRunner()


def _rows(times: dict[int, float]) -> list[ScaleRow]:
    return [ScaleRow(n, *([t] * len(STEPS))) for n, t in sorted(times.items())]


def test_growth_is_the_fitted_exponent() -> None:
    linear = growth_of(_rows({8: 0.1, 16: 0.2, 32: 0.4, 64: 0.8}), "connect_s")
    assert linear.exponent == pytest.approx(1.0)
    assert not linear.superlinear
    assert linear.at_target_s == pytest.approx(0.8 * 1024 / 64)
    quadratic = growth_of(_rows({8: 0.01, 16: 0.04, 32: 0.16}), "connect_s")
    assert quadratic.exponent == pytest.approx(2.0)
    assert quadratic.superlinear


def test_two_sizes_end_to_end(tmp_path: Path) -> None:
    args = ["bench", "scale", "--nodes", "2", "--nodes", "1", "--dir", str(tmp_path), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [row["nodes"] for row in report["rows"]] == [1, 2]
    for row in report["rows"]:
        # Each step ran: a daemon has to be spawned, register, accept a
        # session and answer a ping before the next step starts.
        for step in ("spawn_s", "membership_s", "connect_s", "first_rpc_s", "stop_s"):
            assert row[step] > 0, (step, row)
    assert [g["step"] for g in report["growth"]] == list(STEPS)
    assert list(tmp_path.iterdir()) == [], "the benchmark must remove what it created"


def test_a_size_below_one_is_refused() -> None:
    result = runner.invoke(app, ["bench", "scale", "--nodes", "0"])
    assert result.exit_code == 2
    assert "--nodes" in result.output


def test_host_counts_need_the_hosts() -> None:
    result = runner.invoke(app, ["bench", "scale", "--hosts", "4,8"])
    assert result.exit_code != 0
    assert "--hosts needs --hostfile" in str(result.exception)
    result = runner.invoke(app, ["bench", "scale", "--hosts", "4,x", "--hostfile", "/nonexistent"])
    assert result.exit_code != 0
    assert "--hosts 4,x: expected counts like 4,8,16" in str(result.exception)


def test_fit_scales_the_largest_point() -> None:
    growth = fit([(4, 1.0), (16, 4.0), (8, 2.0)], "stop_s", target=32)
    assert growth.exponent == pytest.approx(1.0)
    assert growth.at_target_s == pytest.approx(8.0)
