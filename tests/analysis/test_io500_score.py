"""The IO500 score as the reference implementation computes it
(github.com/IO500/io500, src/main.c calc_score): geometric means of the
bandwidth and the metadata phases, the score the square root of their
product; phases not above 0 left out."""

from __future__ import annotations

import math

import pytest

from analysis.io500 import PHASE_NAMES, phase_figure, score, score_of_rows

# The example output in the reference implementation's README (IO500/io500 at
# commit 02091cf, "Example output on the command line": `mpiexec -np 2
# ./io500 config-minimal.ini`), every [RESULT] line and its [SCORE] line:
# "Bandwidth 0.172092 GB/s : IOPS 292.625029 kiops : TOTAL 7.096374".
README_EXAMPLE = {
    "ior-easy-write": 0.186620,
    "mdtest-easy-write": 103.300821,
    "ior-hard-write": 0.001313,
    "mdtest-hard-write": 58.939081,
    "find": 1486.435084,
    "ior-easy-read": 1.575557,
    "mdtest-easy-stat": 839.392805,
    "ior-hard-read": 2.272671,
    "mdtest-hard-stat": 1212.558124,
    "mdtest-easy-delete": 160.765642,
    "mdtest-hard-read": 275.011939,
    "mdtest-hard-delete": 132.015851,
}


def test_the_phases_are_io500s_scored_phases_in_its_order() -> None:
    # src/phase-definitions.h without the optional and unscored phases
    # (find-easy, find-hard, mdworkbench-*, ior-rnd4K-easy-read) and the
    # dummy ones (the timestamp comes after mdtest-easy-write).
    assert PHASE_NAMES == (
        "ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write",
        "find", "ior-easy-read", "mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat",
        "mdtest-easy-delete", "mdtest-hard-read", "mdtest-hard-delete",
    )  # fmt: skip


def test_the_score_of_the_reference_readme_example() -> None:
    result = score(README_EXAMPLE)
    # The printed figures are rounded to 6 decimals (ior-hard-write to 4
    # significant digits), so the means agree to about 1e-4.
    assert result.metadata == pytest.approx(292.625029, rel=1e-6)
    assert result.bandwidth == pytest.approx(0.172092, rel=1e-4)
    assert result.score == pytest.approx(7.096374, rel=1e-4)
    assert result.score == pytest.approx(math.sqrt(result.bandwidth * result.metadata))


def test_a_phase_not_above_zero_is_left_out_and_an_empty_group_counts_zero() -> None:
    figures = {"ior-easy-write": 4.0, "ior-easy-read": 1.0, "ior-hard-write": 0.0,
               "find": 9.0}  # fmt: skip
    result = score(figures)
    assert result.bandwidth == pytest.approx(2.0)  # sqrt(4 x 1): the 0 is not a factor
    assert result.metadata == pytest.approx(9.0)
    assert result.score == pytest.approx(math.sqrt(18.0))
    assert score({"ior-easy-write": 4.0}).score == 0.0


def test_a_name_that_is_not_an_io500_phase_is_refused() -> None:
    with pytest.raises(ValueError, match="not IO500 phases: ior-easy-rnd"):
        score({"ior-easy-rnd": 1.0})


def test_phase_rows_give_gib_per_s_and_kiops() -> None:
    rows = [
        {"phase": "ior-easy-write", "kind": "data", "bwMeanMIB": 2048.0},
        {"phase": "find", "kind": "metadata", "rate_mean_ops_s": 5000.0},
        {"phase": "write", "kind": "data", "bwMeanMIB": 1.0},  # not a suite phase
    ]
    assert phase_figure(rows[0]) == pytest.approx(2.0)
    assert phase_figure(rows[1]) == pytest.approx(5.0)
    assert score_of_rows(rows).score == pytest.approx(math.sqrt(10.0))
