"""The report's tables of a suite run: IO500's phases with their figures,
and the score with its two groups (``analysis.io500``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from analysis.io500 import UNITS
from analysis.reports.model import Table


def _time_s(row: pd.Series) -> Any:
    column = "time_mean_s" if row.get("kind") == "metadata" else "MeanTime"
    return row.get(column)


def suite_tables(workload: pd.DataFrame, suite: dict[str, Any]) -> list[Table]:
    about = suite["suite"]
    score = pd.DataFrame(
        [
            ("score", suite["score"], ""),
            ("bandwidth", suite["bandwidth"], UNITS["bandwidth"]),
            ("metadata", suite["metadata"], UNITS["metadata"]),
        ],
        columns=["figure", "value", "unit"],
    )
    caption = (
        f"{about.get('name')} score ({about.get('tool')}, {about.get('tasks')} ranks, "
        f"stonewall {about.get('stonewall_s')} s): sqrt(bandwidth x metadata), each the "
        "geometric mean of its phases"
    )
    rows = [
        (row["phase"], row.get("io500_rate"), row.get("io500_unit"), _time_s(row),
         bool(row.get("stonewalled")))
        for _, row in workload.iterrows()
    ]  # fmt: skip
    phases = pd.DataFrame(rows, columns=["phase", "result", "unit", "time_s", "stonewalled"])
    return [Table(caption, score), Table("IO500 phases in the order run", phases)]
