"""Column headers with units, and cell formatting, shared by every renderer.

Statistics name columns with a unit suffix (``p99_ms``, ``slow_pct``); here
they become headers people read (``p99 (ms)``, ``slow (%)``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from analysis.figures import figure

_EXACT = {
    "count": "count (ops)", "ops": "ops (count)", "slow_ops": "slow ops (count)",
    "slow_pct": "slow ops (%)", "errors": "errors (count)", "submits": "submits (count)",
    "requests": "requests (count)", "bytes": "bytes (B)", "MiB": "data (MiB)",
    "requests_pct": "requests (%)", "share_pct": "share (%)", "depth1_pct": "io_depth 1 (%)",
    "mean_in_flight": "mean in flight (ops)", "max_in_flight": "max in flight (ops)",
    "read_ops": "read ops (count)", "write_ops": "write ops (count)",
    "read_write_ratio": "read/write mean (ratio)", "rpcs": "RPCs (count)",
    "buckets": "time buckets (count)", "slow_buckets": "slow buckets (count)",
    "iostat_samples": "iostat samples (count)", "t_start_s": "from (s)",
    "bwMaxMIB": "bwMaxMIB (MiB/s)", "bwMinMIB": "bwMinMIB (MiB/s)",
    "bwMeanMIB": "bwMeanMIB (MiB/s)", "bwStdMIB": "bwStdMIB (MiB/s)",
    "OPsMax": "OPsMax (ops/s)", "OPsMin": "OPsMin (ops/s)", "OPsMean": "OPsMean (ops/s)",
    "OPsSD": "OPsSD (ops/s)", "MeanTime": "MeanTime (s)", "xsizeMiB": "xsizeMiB (MiB)",
    "StoneWallTime": "StoneWallTime (s)", "StoneWallbwMeanMIB": "StoneWallbwMeanMIB (MiB/s)",
    "items": "items (count)", "latency_ops": "latency ops (count)",
    "bw_MiB_s": "bw (MiB/s)", "iops": "IOPS (ops/s)", "io_bytes": "io (bytes)",
    "A": "A", "B": "B", "change_pct": "change (%)", "max_over_mean": "max/mean (ratio)",
    "cv": "coefficient of variation", "idle_targets": "idle targets (count)",
    "retried_rpcs": "retried RPCs (count)", "retried_pct": "retried (%)",
    "total_retries": "retries (count)", "failed_rpcs": "failed RPCs (count)",
    "failed_pct": "failed (%)",
}  # fmt: skip
_SUFFIXES = (
    ("_ops_s", "ops/s"), ("_sqes", "SQEs"), ("_ms", "ms"), ("_us", "us"), ("_ns", "ns"),
    ("_pct", "%"), ("_s", "s"), ("_MiB", "MiB"), ("_bytes", "B"),
)  # fmt: skip


def header(column: str) -> str:
    """The header of a statistics column, with its unit."""
    if column in _EXACT:
        return _EXACT[column]
    for suffix, unit in _SUFFIXES:
        if column.endswith(suffix):
            return f"{column.removesuffix(suffix).replace('_', ' ')} ({unit})"
    return column.replace("_", " ")


def cell(value: Any) -> str:
    """A compact, readable cell: thousands separators, 3 significant digits below 100."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    if isinstance(value, float | np.floating):
        number = float(value)
        if math.isfinite(number) and number == int(number) and abs(number) < 1e15:
            return f"{int(number):,}"
        return figure(number)
    return str(value)


def display_frame(frame: pd.DataFrame) -> list[list[str]]:
    """Header row then body rows, all as strings."""
    rows = [[header(str(column)) for column in frame.columns]]
    for record in frame.itertuples(index=False):
        rows.append([cell(value) for value in record])
    return rows
