"""How a figure is printed in tables and sentences: a few significant digits,
whole with thousands separators from 100 up, and never in exponent form."""

from __future__ import annotations

import math


def figure(value: float | None, digits: int = 3, sign: str = "") -> str:
    """``value`` to ``digits`` significant digits ("-" for None or NaN);
    ``sign="+"`` shows the sign of a difference."""
    if value is None or math.isnan(value):
        return "-"
    # The form follows the value as rounded: 99.6 to 2 digits is 100, never "1e+02".
    if math.isinf(value) or abs(float(f"{value:.{digits}g}")) < 100:
        return f"{value:{sign}.{digits}g}"
    return f"{value:{sign},.0f}"
