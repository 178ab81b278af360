"""Percentiles per group, computed with numpy on each group's values.

pandas' grouped quantile re-sorts per call; with a handful of groups and
millions of rows one numpy pass per group is faster and gives the same
(linear) interpolation. numpy's percentile selects each quantile's
neighbours with a partition; on values sorted first (numpy's vectorised
sort) that partition is cheap, and the values it selects, so the
percentiles, are the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis.stats._common import PERCENTILES, group_positions


def grouped_distribution(
    frame: pd.DataFrame,
    keys: str | list[str],
    value: str,
    *,
    scale: float = 1.0,
    suffix: str = "",
    names: Sequence[str] = ("p50", "p90", "p95", "p99", "p99.9"),
) -> pd.DataFrame:
    """Per group: count, mean, the named percentiles and max of ``value / scale``."""
    key_list = [keys] if isinstance(keys, str) else list(keys)
    values = frame[value].to_numpy(dtype=np.float64) / scale
    rows: list[dict[str, object]] = []
    groups: dict[Any, Any] = (
        group_positions(frame[key_list[0]])
        if len(key_list) == 1
        else frame.groupby(key_list, observed=True, sort=True).indices
    )
    for group_key, positions in groups.items():
        key_tuple = group_key if isinstance(group_key, tuple) else (group_key,)
        row: dict[str, object] = dict(zip(key_list, key_tuple, strict=True))
        row.update(distribution(values[positions], suffix=suffix, names=names))
        rows.append(row)
    columns = [*key_list, "count", f"mean{suffix}"]
    columns += [f"{name}{suffix}" for name in names] + [f"max{suffix}"]
    return pd.DataFrame(rows, columns=columns)


def distribution(
    values: npt.NDArray[np.float64],
    *,
    suffix: str = "",
    names: Sequence[str] = ("p50", "p90", "p95", "p99", "p99.9"),
) -> dict[str, object]:
    """count, mean, the named percentiles and max of one array of values."""
    row: dict[str, object] = {"count": int(values.size), f"mean{suffix}": float(values.mean())}
    points = np.percentile(np.sort(values), [PERCENTILES[name] for name in names])
    for name, point in zip(names, points, strict=True):
        row[f"{name}{suffix}"] = float(point)
    row[f"max{suffix}"] = float(values.max())
    return row
