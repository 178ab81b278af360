"""Read ``benchfs-diagnose`` documents: what ``benchfs diagnose --json`` prints
and what each node's preflight leaves in a run's ``preflight/<node>.json``.

One row per node, test and direction, with the columns of a fio frame
(``analysis.loaders.fio``) so that both sit in one table, plus the device's
await from iostat and the node's verdict. A node that could not run is one
row with its ``error``.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from analysis.errors import DataFormatError
from analysis.loaders._jsontext import decode_embedded_object

KIND = "benchfs-diagnose"
_KIND_FIELD = re.compile(r'"kind"\s*:\s*"' + KIND + '"')


class DiagnoseFormatError(DataFormatError, ValueError):
    """A benchfs-diagnose document that cannot be read."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(source, "document", reason)


def is_diagnose_document(text: str) -> bool:
    """Whether ``text`` is a benchfs-diagnose document (its kind says so)."""
    return _KIND_FIELD.search(text) is not None


def parse_diagnose_json(text: str, source: str) -> pd.DataFrame:
    """The rows of every node of a benchfs-diagnose document."""
    document = decode_embedded_object(text, source, "benchfs-diagnose", ValueError)
    if document.get("kind") != KIND:
        raise DiagnoseFormatError(source, f"not a {KIND} document")
    nodes = document.get("nodes")
    if not isinstance(nodes, list):
        raise DiagnoseFormatError(source, "no 'nodes' list")
    rows: list[dict[str, Any]] = []
    for entry in nodes:
        try:
            rows += _node_rows(entry)
        except (KeyError, TypeError, AttributeError) as error:
            raise DiagnoseFormatError(source, f"a node lacks or mangles {error}") from error
    return pd.DataFrame(rows)


def _node_rows(entry: dict[str, Any]) -> list[dict[str, Any]]:
    measurement = entry["measurement"]
    node = {
        "node": str(entry["node"]),
        "hostname": measurement.get("hostname", ""),
        "status": entry.get("status", ""),
    }
    if measurement.get("error"):
        return [{**node, "error": measurement["error"]}]
    rows = []
    for test in measurement["tests"]:
        metrics, iostat = test.get("metrics", {}), test.get("iostat", {})
        for direction, await_key in (("read", "r_await_ms"), ("write", "w_await_ms")):
            if f"{direction}_bw_MiB_s" not in metrics:
                continue
            rows.append(
                {
                    **node,
                    "job": test["name"],
                    "direction": direction,
                    "bw_MiB_s": metrics[f"{direction}_bw_MiB_s"],
                    "iops": metrics.get(f"{direction}_iops"),
                    "runtime_s": test.get("duration_s"),
                    "clat_p50_ns": metrics.get(f"{direction}_p50_ns"),
                    "clat_p90_ns": metrics.get(f"{direction}_p90_ns"),
                    "clat_p99_ns": metrics.get(f"{direction}_p99_ns"),
                    "clat_p99.9_ns": metrics.get(f"{direction}_p99.9_ns"),
                    "clat_max_ns": metrics.get(f"{direction}_max_ns"),
                    "await_ms": iostat.get(await_key),
                    "error": test.get("error"),
                }
            )
    return rows
