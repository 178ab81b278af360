"""Values as JSON writes them: plain Python numbers, None for what is not known."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np


def plain(value: Any) -> Any:
    """numpy scalars as Python numbers; NaN as None (JSON has no NaN); the rest as is."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def plain_row(row: Mapping[Any, Any]) -> dict[str, Any]:
    return {str(key): plain(value) for key, value in row.items()}
