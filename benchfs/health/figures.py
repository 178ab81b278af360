"""How the health reports print a number: whole with thousands separators from 100 up,
a few significant digits below, and never in exponent form."""

from __future__ import annotations

import math


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None or math.isnan(value):
        return "-"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    # The form follows the value as rounded: 99.6 to 2 digits is 100, never "1e+02".
    if abs(float(f"{value:.{digits}g}")) >= 100:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"
