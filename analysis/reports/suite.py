"""The report's tables of a suite run: IO500's phases with their figures,
the score with its two groups (``analysis.io500``), and, for a result the
reference's rules find not valid, why."""

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
    valid = suite.get("valid") is not False
    score = pd.DataFrame(
        [
            ("score", suite["score"], "" if valid else "[INVALID]"),
            ("bandwidth", suite["bandwidth"], UNITS["bandwidth"]),
            ("metadata", suite["metadata"], UNITS["metadata"]),
        ],
        columns=["figure", "value", "unit"],
    )
    caption = (
        f"{about.get('name')} score ({about.get('tool')}, {about.get('tasks')} ranks, "
        f"stonewall {about.get('stonewall_s')} s): sqrt(bandwidth x metadata), each the "
        f"geometric mean of its phases; {'a valid' if valid else 'not a valid'} IO500 result"
    )
    rows = [
        (row["phase"], row.get("io500_rate"), row.get("io500_unit"), _time_s(row),
         bool(row.get("stonewalled")), "no" if row.get("valid") is False else "yes")
        for _, row in workload.iterrows()
    ]  # fmt: skip
    columns = ["phase", "result", "unit", "time_s", "stonewalled", "valid"]
    tables = [Table(caption, score), Table("IO500 phases in the order run", pd.DataFrame(
        rows, columns=columns))]  # fmt: skip
    if not valid:
        reasons = pd.DataFrame({"reason": list(suite.get("invalid_reasons") or [])})
        tables.append(Table("Why this is not a valid IO500 result (the reference's rules)",
                            reasons))  # fmt: skip
    return tables
