"""What a run's report leads with: its title (label, target, date) and one
headline table, a row per phase with the figures people look for first
(bandwidth or rate, time, p50/p99, stonewalled, verified), as `benchfs run`
prints them. Every other figure is in the tables further down."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from analysis.loaders.run import RunData
from analysis.reports.model import Table

HEADLINE_CAPTION = "Each phase: bandwidth or rate, time, latency, stonewall, verification"


def run_title(run: RunData) -> str:
    """``BenchFS run LABEL: TARGET, DATE``; the parts a run does not record are left out."""
    started = run.start_time
    date = "" if started is None else started.strftime("%Y-%m-%d %H:%M UTC")
    parts = [part for part in (_target(run), date) if part]
    return f"BenchFS run {run.label}" + (f": {', '.join(parts)}" if parts else "")


def headline_table(run: RunData) -> Table | None:
    """One row per phase of the run's summary; None when it has no phases."""
    workload = run.workload
    if workload.empty or "phase" not in workload.columns:
        return None
    verify = _verify(run.config)
    rows = []
    for record in workload.to_dict("records"):
        row = {str(key): value for key, value in record.items()}
        metadata = row.get("kind") == "metadata"
        rows.append(
            {
                "phase": row["phase"],
                "bw_MiB_s": None if metadata else _number(row.get("bwMeanMIB")),
                "rate_ops_s": _number(row.get("rate_mean_ops_s")) if metadata else None,
                "time_s": _number(row.get("time_mean_s" if metadata else "MeanTime")),
                "p50_ms": _ms(row.get("p50_us")),
                "p99_ms": _ms(row.get("p99_us")),
                "stonewalled": _yes_no(row.get("stonewalled")),
                "verified": _verified(row, verify),
            }
        )
    frame = pd.DataFrame(rows)
    keep = [c for c in frame.columns if c == "phase" or frame[c].notna().any()]
    return Table(HEADLINE_CAPTION, frame[keep])


def _target(run: RunData) -> str:
    """What the phases measured: a mount figure is never taken for a native one."""
    first = run.workload.iloc[0].to_dict() if not run.workload.empty else {}
    target = first.get("target")
    if isinstance(target, str) and target not in ("", "benchfs"):
        return target
    interface = first.get("interface") or run.interface
    if interface == "mount":
        return "BenchFS through the mount"
    if interface == "native" or target == "benchfs":
        return "BenchFS native client"
    tools = sorted({str(t) for t in run.workload.get("tool", pd.Series(dtype=str)).dropna()})
    return ", ".join(tools)


def _verify(config: dict[str, Any]) -> bool | None:
    workload = config.get("workload")
    value = workload.get("verify") if isinstance(workload, dict) else None
    return value if isinstance(value, bool) else None


def _verified(row: dict[str, Any], verify: bool | None) -> str:
    """Only BenchFS's own reads are checked, and only with ``workload.verify``."""
    if row.get("operation", row.get("phase")) != "read" or row.get("tool", "benchfs") != "benchfs":
        return "-"
    if verify is None:
        return "-"
    if not verify:
        return "no"
    errors = int(_number(row.get("verify_errors")) or 0)
    return "yes" if errors == 0 else f"{errors:,} errors"


def _yes_no(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return "yes" if value else "no"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


def _ms(value: Any) -> float | None:
    number = _number(value)
    return None if number is None else number / 1000
