"""A fio run as data phase rows under IOR's names.

One phase per direction (``write``, ``read``; ``<job> <direction>`` when the
run had several job names). fio runs its jobs at once, so the jobs of one
name are one phase: bandwidth is all their bytes over the longest job's
runtime (as IOR divides all bytes by the span of the slowest rank); one
run is one repetition, so max, min and mean coincide and the standard
deviation is 0. Latency is fio's completion latency (``clat``), given
only when one job entry holds the phase (fio's ``group_reporting``):
percentiles of several jobs cannot be merged from their percentiles.
Queue depth is ``iodepth`` (1 for fio's synchronous engines, which
ignore it). fio's terse output names no option: its phases leave engine,
queue depth, access, ordering and sizes unknown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from analysis.loaders.fio import Direction, FioJobResult, FioReport
from analysis.phases import LATENCY_KEYS, Provenance

MIB = 1024 * 1024
_SYNC_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2", "mmap", "ftruncate"})
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}


def fio_phases(report: FioReport) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[FioJobResult]] = {}
    for job in report.jobs:
        for name, direction in job.directions.items():
            if direction.active:
                groups.setdefault((job.name, name), []).append(job)
    names = {job for job, _ in groups}
    rows = []
    for (job_name, direction_name), jobs in groups.items():
        phase = direction_name if len(names) == 1 else f"{job_name} {direction_name}"
        rows.append(_phase(report, phase, direction_name, jobs))
    return rows


def _phase(
    report: FioReport, phase: str, direction_name: str, jobs: list[FioJobResult]
) -> dict[str, Any]:
    directions: list[Direction] = [job.directions[direction_name] for job in jobs]
    options = {**report.global_options, **jobs[0].options}
    io_bytes = sum(d.io_bytes for d in directions)
    runtime = max(d.runtime_s for d in directions)
    bw = io_bytes / MIB / runtime if runtime > 0 else None
    ops = sum(d.total_ios for d in directions) / runtime if runtime > 0 else None
    provenance = _provenance(report, options, len(jobs))
    row: dict[str, Any] = {
        "phase": phase,
        **provenance.fields(),
        "operation": direction_name,
        "API": options.get("ioengine", "psync") if options_known(report) else None,
        "numTasks": len(jobs),
        "repetitions": 1,
        "transferSize": _size(options.get("bs", options.get("blocksize"))),
        "blockSize": _size(options.get("size")),
        "bwMaxMIB": bw,
        "bwMinMIB": bw,
        "bwMeanMIB": bw,
        "bwStdMIB": 0.0 if bw is not None else None,
        "OPsMax": ops,
        "OPsMin": ops,
        "OPsMean": ops,
        "OPsSD": 0.0 if ops is not None else None,
        "MeanTime": runtime,
        "xsizeMiB": io_bytes / MIB,
        "bytes": io_bytes,
        "ops": sum(d.total_ios for d in directions),
        "errors": sum(1 for job in jobs if job.error),
        "source": report.source,
    }
    row.update(_latency(directions))
    return row


def options_known(report: FioReport) -> bool:
    """fio's terse output names no job option: engine, depth, sizes are unknown, not defaults."""
    return report.output_format != "terse"


def _provenance(report: FioReport, options: Mapping[str, str], jobs: int) -> Provenance:
    version = report.fio_version.removeprefix("fio-")
    if not options_known(report):
        return Provenance(tool="fio", tool_version=version, kind="data")
    engine = options.get("ioengine", "psync")
    return Provenance(
        tool="fio",
        tool_version=version,
        kind="data",
        queue_depth=1 if engine in _SYNC_ENGINES else _int(options.get("iodepth", "1")),
        access="single-shared-file" if "filename" in options and jobs > 1
        else "file-per-process",
        ordering="random" if "rand" in options.get("rw", options.get("readwrite", ""))
        else "sequential",
    )  # fmt: skip


def _latency(directions: list[Direction]) -> Mapping[str, Any]:
    clat = directions[0].clat if len(directions) == 1 else None
    if clat is None:
        return {"latency_ops": None, **dict.fromkeys(LATENCY_KEYS)}
    return {
        "latency_ops": clat.count,
        "min_us": clat.min_ns / 1000,
        "mean_us": clat.mean_ns / 1000,
        "p50_us": _us(clat.p50_ns),
        "p90_us": _us(clat.p90_ns),
        "p99_us": _us(clat.p99_ns),
        "p99.9_us": _us(clat.p999_ns),
        "max_us": clat.max_ns / 1000,
    }


def _us(value: float | None) -> float | None:
    return None if value is None else value / 1000


def _size(text: str | None) -> int | None:
    match = _SIZE.match(text) if text else None
    if match is None:
        return None
    return int(float(match[1]) * _UNITS[match[2].lower()])


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None
