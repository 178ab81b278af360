"""The workload tables of a report: data phases under IOR's names, metadata
phases under mdtest's, and the tool outputs the phases were read from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from analysis.phases import DATA_SKIP, PROVENANCE_FIELDS
from analysis.reports.model import Table

DATA_COLUMNS = ("bwMaxMIB", "bwMinMIB", "bwMeanMIB", "bwStdMIB", "OPsMean", "MeanTime")
# IOR bookkeeping fields that say nothing about performance.
METADATA_COLUMNS = ("tasks", "repetitions", "items", "rate_max_ops_s", "rate_min_ops_s",
                    "rate_mean_ops_s", "rate_stddev_ops_s", "time_mean_s", "rank_rate_min_ops_s",
                    "rank_rate_max_ops_s", "p50_us", "p99_us", "p99.9_us",
                    "unsupported")  # fmt: skip
# Shown first: what makes rows comparable (which tool, native client or mount, queue, access).
_CONTEXT = ("tool", "interface", "queue_depth", "access")
_NEVER_SHOWN = frozenset({*PROVENANCE_FIELDS, "operation", "object", "phase", "source"})


def phase_tables(workload: pd.DataFrame) -> list[Table]:
    """One table of data phases and one of metadata phases (each only if present)."""
    kinds = workload["kind"] if "kind" in workload.columns else pd.Series("data", workload.index)
    tables = []
    data = workload[kinds != "metadata"]
    if not data.empty:
        chosen = [c for c in DATA_COLUMNS if c in data.columns]
        others = [c for c in data.columns if c not in chosen and c not in DATA_SKIP
                  and c not in METADATA_COLUMNS and c not in _NEVER_SHOWN
                  and pd.api.types.is_numeric_dtype(data[c])]  # fmt: skip
        tables.append(Table("Data phases (IOR's summary names)", _frame(data, chosen + others)))
    metadata = workload[kinds == "metadata"]
    if not metadata.empty:
        chosen = [c for c in METADATA_COLUMNS if c in metadata.columns]
        tables.append(
            Table(
                "Metadata phases (mdtest's names; rates over repetitions)", _frame(metadata, chosen)
            )
        )
    return tables


def tool_output_tables(
    outputs: Sequence[Mapping[str, Any]], ignored: Sequence[str] = ()
) -> list[Table]:
    """The files a directory of tool outputs held, as read (``ToolDirManifest``), and
    those no loader recognized."""
    if not outputs:
        return []
    frame = pd.DataFrame(list(outputs))
    columns = [c for c in ("file", "format", "version", "phases", "used_as", "command_line")
               if c in frame.columns]  # fmt: skip
    tables = [Table("Tool outputs read", frame[columns].fillna("-").astype(str))]
    if ignored:
        frame = pd.DataFrame({"file": list(ignored)})
        tables.append(Table("Files that are no tool's output (ignored)", frame))
    return tables


def _frame(rows: pd.DataFrame, figures: list[str]) -> pd.DataFrame:
    context = [c for c in _CONTEXT if c in rows.columns and rows[c].notna().any()]
    frame = rows[["phase", *context, *figures]].copy()
    keep = [c for c in frame.columns if c == "phase" or frame[c].notna().any()]
    return frame[keep].reset_index(drop=True)
