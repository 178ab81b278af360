"""Numbers in the health reports stay whole and readable at every magnitude."""

from __future__ import annotations

import math

import pytest

from benchfs.health.figures import fmt
from benchfs.health.policy import Evidence


@pytest.mark.parametrize(
    ("value", "digits", "shown"),
    [
        (99.6, 2, "100"),  # an await just under 100 ms, in the terminal's r/w cell
        (9.96, 2, "10"),
        (0.132, 2, "0.13"),
        (42.0, 3, "42"),
        (999.7, 3, "1,000"),
        (12_345.0, 4, "12,345"),
        (-150.0, 3, "-150"),
        (math.inf, 3, "inf"),
        (None, 3, "-"),
        (math.nan, 3, "-"),
    ],
)
def test_a_figure_never_turns_into_an_exponent(
    value: float | None, digits: int, shown: str
) -> None:
    assert fmt(value, digits) == shown


def test_an_exclusion_reason_prints_large_figures_whole() -> None:
    evidence = Evidence("write_iops", 123.0, 52_345.0, 0.00234, -431.0, 20_000.0, True)
    assert evidence.describe() == (
        "write_iops = 123 (0.0023x the median 52,345, robust z -431), below the limit 20,000"
    )
