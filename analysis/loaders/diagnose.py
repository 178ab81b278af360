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

from analysis.diagnose import KIND, DiagnoseDocument, DiagnoseNode
from analysis.loaders._jsontext import decode_embedded_object

_KIND_FIELD = re.compile(r'"kind"\s*:\s*"' + KIND + '"')


def is_diagnose_document(text: str) -> bool:
    """Whether ``text`` is a benchfs-diagnose document (its kind says so)."""
    return _KIND_FIELD.search(text) is not None


def parse_diagnose_json(text: str, source: str) -> pd.DataFrame:
    """The rows of every node of a benchfs-diagnose document."""
    decoded = decode_embedded_object(text, source, KIND, ValueError)
    document = DiagnoseDocument.read(decoded, source)
    rows: list[dict[str, Any]] = []
    for entry in document.nodes:
        rows += _node_rows(entry)
    return pd.DataFrame(rows)


def _node_rows(entry: DiagnoseNode) -> list[dict[str, Any]]:
    measurement = entry.measurement
    node = {"node": entry.node, "hostname": measurement.hostname, "status": entry.status}
    if measurement.error:
        return [{**node, "error": measurement.error}]
    rows = []
    for test in measurement.tests:
        metrics, iostat = test.metrics, test.iostat
        for direction, await_key in (("read", "r_await_ms"), ("write", "w_await_ms")):
            if f"{direction}_bw_MiB_s" not in metrics:
                continue
            rows.append(
                {
                    **node,
                    "job": test.name,
                    "direction": direction,
                    "bw_MiB_s": metrics[f"{direction}_bw_MiB_s"],
                    "iops": metrics.get(f"{direction}_iops"),
                    "runtime_s": test.duration_s,
                    "clat_p50_ns": metrics.get(f"{direction}_p50_ns"),
                    "clat_p90_ns": metrics.get(f"{direction}_p90_ns"),
                    "clat_p99_ns": metrics.get(f"{direction}_p99_ns"),
                    "clat_p99.9_ns": metrics.get(f"{direction}_p99.9_ns"),
                    "clat_max_ns": metrics.get(f"{direction}_max_ns"),
                    "await_ms": iostat.get(await_key),
                    "error": test.error,
                }
            )
    return rows
