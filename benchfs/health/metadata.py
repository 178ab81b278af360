"""Metadata test in Python: create, stat and delete many empty files, timing every call.

fio has filecreate/filestat/filedelete engines, but they report one figure
per phase; timing each os call here gives rates and latency percentiles with
no extra tool. Each phase stops at its deadline so a sick file system cannot
stall the whole diagnosis; the rate is computed over the files actually done.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np


def run_metadata_test(directory: Path, files: int, phase_deadline_s: float) -> dict[str, float]:
    """Metrics ``<phase>_ops_s``, ``<phase>_p50_ns`` ... ``<phase>_max_ns`` and ``files``."""
    workdir = directory / f"benchfs-meta-{os.getpid()}"
    workdir.mkdir(mode=0o700)
    names = [str(workdir / f"f{index:06d}") for index in range(files)]
    created = 0
    metrics: dict[str, float] = {}
    try:

        def create(path: str) -> None:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))

        def remove(path: str) -> None:
            os.unlink(path)

        latencies = _timed(create, names, phase_deadline_s)
        created = len(latencies)
        metrics.update(_summary("create", latencies))
        metrics.update(_summary("stat", _timed(os.stat, names[:created], phase_deadline_s)))
        deleted = _timed(remove, names[:created], phase_deadline_s)
        metrics.update(_summary("delete", deleted))
        metrics["files"] = float(created)
    finally:
        for name in names[:created]:
            if os.path.lexists(name):
                os.unlink(name)
        workdir.rmdir()
    return metrics


def _timed(operation: Callable[[str], object], paths: list[str], deadline_s: float) -> list[int]:
    latencies: list[int] = []
    clock = time.perf_counter_ns
    stop_at = clock() + int(deadline_s * 1e9)
    for path in paths:
        start = clock()
        operation(path)
        end = clock()
        latencies.append(end - start)
        if end > stop_at:
            break
    return latencies


def _summary(phase: str, latencies: list[int]) -> dict[str, float]:
    if not latencies:
        return {f"{phase}_ops_s": 0.0}
    values = np.asarray(latencies, dtype=np.float64)
    p50, p90, p99, p999 = np.percentile(values, [50, 90, 99, 99.9])
    total_s = float(values.sum()) / 1e9
    return {
        f"{phase}_ops_s": len(latencies) / total_s if total_s > 0 else 0.0,
        f"{phase}_p50_ns": float(p50),
        f"{phase}_p90_ns": float(p90),
        f"{phase}_p99_ns": float(p99),
        f"{phase}_p99.9_ns": float(p999),
        f"{phase}_max_ns": float(values.max()),
    }
