"""Figures in tables and sentences stay whole and readable at every magnitude."""

from __future__ import annotations

import math

import pytest

from analysis.figures import figure


@pytest.mark.parametrize(
    ("value", "digits", "sign", "shown"),
    [
        (99.6, 2, "", "100"),  # an await just under 100 ms, in diagnose's r/w cell
        (9.96, 2, "", "10"),
        (0.132, 2, "", "0.13"),
        (42.0, 3, "", "42"),
        (999.7, 3, "", "1,000"),
        (12_345.0, 4, "", "12,345"),
        (-150.0, 3, "", "-150"),
        (2_499.0, 3, "+", "+2,499"),
        (0.5, 3, "+", "+0.5"),
        (math.inf, 3, "", "inf"),
        (None, 3, "", "-"),
        (math.nan, 3, "", "-"),
    ],
)
def test_a_figure_never_turns_into_an_exponent(
    value: float | None, digits: int, sign: str, shown: str
) -> None:
    assert figure(value, digits, sign) == shown
