"""Parse fio's JSON output (``--output-format=json`` or ``json+``) and bandwidth logs.

fio's terse output becomes the same FioReport in ``analysis.loaders.fio_terse``.

Handles plain runs (``jobs``), client mode (``--client``: ``client_stats`` with
a ``hostname`` per entry; fio's own "All clients" sum is dropped) and text
around the document (fio prints warnings before its JSON). Bandwidths are in
MiB/s, latencies in nanoseconds, percentiles named as fio names them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from analysis.errors import AnalysisError
from analysis.loaders._jsontext import decode_embedded_object

KIB = 1024
MIB = 1024 * 1024
_CLIENT_SUM_JOBNAME = "All clients"
_PERCENTILE_KEYS = {"p50": "50.000000", "p90": "90.000000", "p99": "99.000000", "p999": "99.900000"}


class FioFormatError(AnalysisError, ValueError):
    """fio output or a bandwidth log could not be parsed; names the source and position."""


@dataclass(frozen=True)
class Latency:
    """A latency distribution in nanoseconds; percentiles are None when fio gave none."""

    count: int
    mean_ns: float
    min_ns: float
    max_ns: float
    p50_ns: float | None = None
    p90_ns: float | None = None
    p99_ns: float | None = None
    p999_ns: float | None = None


@dataclass(frozen=True)
class Direction:
    """One direction (read, write, trim) of one fio job."""

    io_bytes: int = 0
    bw_mib_s: float = 0.0
    iops: float = 0.0
    runtime_s: float = 0.0
    total_ios: int = 0
    clat: Latency | None = None
    lat: Latency | None = None
    # fio's own per-interval bandwidth statistics (KiB/s in the JSON, here MiB/s).
    bw_mean_mib_s: float | None = None
    bw_dev_mib_s: float | None = None
    bw_min_mib_s: float | None = None
    bw_max_mib_s: float | None = None
    bw_sample_count: int = 0
    # Bandwidth over time from the bw log, MiB/s per interval (empty without a log).
    bw_samples: tuple[float, ...] = ()

    @property
    def active(self) -> bool:
        return self.total_ios > 0

    def bw_variation(self) -> float | None:
        """Coefficient of variation of bandwidth over time (stdev / mean), if known."""
        if len(self.bw_samples) >= 3:
            samples = pd.Series(self.bw_samples)
            mean = float(samples.mean())
            return float(samples.std(ddof=0)) / mean if mean > 0 else None
        if self.bw_sample_count >= 3 and self.bw_mean_mib_s and self.bw_dev_mib_s is not None:
            return self.bw_dev_mib_s / self.bw_mean_mib_s
        return None


@dataclass(frozen=True)
class FioJobResult:
    """One job entry of fio's report (one group when fio's group_reporting is on)."""

    name: str
    error: int
    read: Direction
    write: Direction
    trim: Direction
    sync: Latency | None
    hostname: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    runtime_s: float = 0.0

    @property
    def directions(self) -> dict[str, Direction]:
        return {"read": self.read, "write": self.write, "trim": self.trim}


@dataclass(frozen=True)
class FioReport:
    """All jobs of one fio run."""

    source: str
    fio_version: str
    jobs: tuple[FioJobResult, ...]
    global_options: Mapping[str, str] = field(default_factory=dict)
    # "json" (json, json+) or "terse", which carries no job options (analysis.loaders.fio_terse)
    output_format: str = "json"

    @property
    def hostnames(self) -> list[str]:
        seen: dict[str, None] = {}
        for job in self.jobs:
            if job.hostname is not None:
                seen.setdefault(job.hostname, None)
        return list(seen)

    def job(self, name: str, hostname: str | None = None) -> FioJobResult:
        for job in self.jobs:
            if job.name == name and (hostname is None or job.hostname == hostname):
                return job
        where = f" on {hostname}" if hostname else ""
        raise KeyError(f"{self.source}: no fio job named {name!r}{where}")

    def to_frame(self) -> pd.DataFrame:
        """One row per job and active direction, units in the column names."""
        rows: list[dict[str, Any]] = []
        for job in self.jobs:
            for name, direction in job.directions.items():
                if not direction.active:
                    continue
                clat = direction.clat
                rows.append(
                    {
                        "hostname": job.hostname,
                        "job": job.name,
                        "direction": name,
                        "bw_MiB_s": direction.bw_mib_s,
                        "iops": direction.iops,
                        "io_bytes": direction.io_bytes,
                        "runtime_s": direction.runtime_s,
                        "clat_p50_ns": clat.p50_ns if clat else None,
                        "clat_p90_ns": clat.p90_ns if clat else None,
                        "clat_p99_ns": clat.p99_ns if clat else None,
                        "clat_p99.9_ns": clat.p999_ns if clat else None,
                        "clat_max_ns": clat.max_ns if clat else None,
                    }
                )
        return pd.DataFrame(rows)

    def with_bw_samples(self, samples: Mapping[tuple[str, str], Iterable[float]]) -> FioReport:
        """A copy with bandwidth series attached, keyed by (job name, direction)."""
        jobs = []
        for job in self.jobs:
            changes: dict[str, Direction] = {}
            for name, direction in job.directions.items():
                series = samples.get((job.name, name))
                if series is not None:
                    changes[name] = dataclasses.replace(direction, bw_samples=tuple(series))
            jobs.append(dataclasses.replace(job, **changes))  # type: ignore[arg-type]
        return dataclasses.replace(self, jobs=tuple(jobs))


def parse_fio_json(text: str, source: str) -> FioReport:
    """Parse fio JSON (normal, json+ or client mode) from ``text``; ``source`` names it."""
    document = decode_embedded_object(text, source, "fio", FioFormatError)
    if "client_stats" in document:
        entries, client_mode = document["client_stats"], True
    elif "jobs" in document:
        entries, client_mode = document["jobs"], False
    else:
        raise FioFormatError(f"{source}: fio JSON has neither 'jobs' nor 'client_stats'")
    if not isinstance(entries, list):
        raise FioFormatError(f"{source}: fio JSON 'jobs' is not a list")
    jobs = []
    for index, entry in enumerate(entries):
        where = f"{source}: job #{index}"
        if not isinstance(entry, dict):
            raise FioFormatError(f"{where}: not an object")
        if client_mode and entry.get("jobname") == _CLIENT_SUM_JOBNAME:
            continue
        jobs.append(_job(entry, where, client_mode))
    global_options = document.get("global options", {})
    return FioReport(
        source=source,
        fio_version=str(document.get("fio version", "")),
        jobs=tuple(jobs),
        global_options=(
            {str(k): str(v) for k, v in global_options.items()}
            if isinstance(global_options, dict)
            else {}
        ),
    )


def parse_fio_bw_log(text: str, source: str) -> dict[int, list[tuple[int, float]]]:
    """Parse a fio bandwidth log (``write_bw_log``) into (time ms, MiB/s) per direction.

    Lines are ``time_ms, KiB/s, direction, block size, offset[, priority]``;
    direction 0 is read, 1 write, 2 trim.
    """
    series: dict[int, list[tuple[int, float]]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = [part.strip() for part in line.split(",")]
        try:
            time_ms, kib_s, direction = int(fields[0]), int(fields[1]), int(fields[2])
        except (IndexError, ValueError) as exc:
            raise FioFormatError(f"{source}:{number}: not a fio bw log line: {line!r}") from exc
        series.setdefault(direction, []).append((time_ms, kib_s / KIB))
    return series


def merge_bw_logs(logs: Iterable[list[tuple[int, float]]], interval_ms: int) -> list[float]:
    """Sum several jobs' series of one direction into one series per ``interval_ms`` bucket."""
    buckets: dict[int, float] = {}
    for log in logs:
        for time_ms, mib_s in log:
            bucket = round(time_ms / interval_ms)
            buckets[bucket] = buckets.get(bucket, 0.0) + mib_s
    return [buckets[key] for key in sorted(buckets)]


def _job(entry: dict[str, Any], where: str, client_mode: bool) -> FioJobResult:
    name = entry.get("jobname")
    if not isinstance(name, str):
        raise FioFormatError(f"{where}: missing 'jobname'")
    where = f"{where} ({name})"
    options = entry.get("job options", {})
    sync = entry.get("sync")
    return FioJobResult(
        name=name,
        error=_int(entry.get("error", 0), f"{where}: error"),
        read=_direction(entry.get("read"), f"{where}: read"),
        write=_direction(entry.get("write"), f"{where}: write"),
        trim=_direction(entry.get("trim"), f"{where}: trim"),
        sync=_latency(sync.get("lat_ns"), f"{where}: sync") if isinstance(sync, dict) else None,
        hostname=str(entry["hostname"]) if client_mode and "hostname" in entry else None,
        options={str(k): str(v) for k, v in options.items()} if isinstance(options, dict) else {},
        runtime_s=_number(entry.get("job_runtime", 0), f"{where}: job_runtime") / 1000.0,
    )


def _direction(section: Any, where: str) -> Direction:
    if section is None:
        return Direction()
    if not isinstance(section, dict):
        raise FioFormatError(f"{where}: not an object")
    total_ios = _int(section.get("total_ios", 0), f"{where}: total_ios")
    samples = _int(section.get("bw_samples", 0), f"{where}: bw_samples")

    def kib(key: str) -> float | None:
        value = section.get(key)
        return None if value is None else _number(value, f"{where}: {key}") / KIB

    return Direction(
        io_bytes=_int(section.get("io_bytes", 0), f"{where}: io_bytes"),
        bw_mib_s=_number(section.get("bw_bytes", 0), f"{where}: bw_bytes") / MIB,
        iops=_number(section.get("iops", 0), f"{where}: iops"),
        runtime_s=_number(section.get("runtime", 0), f"{where}: runtime") / 1000.0,
        total_ios=total_ios,
        clat=_latency(section.get("clat_ns"), f"{where}: clat_ns") if total_ios else None,
        lat=_latency(section.get("lat_ns"), f"{where}: lat_ns") if total_ios else None,
        bw_mean_mib_s=kib("bw_mean") if samples else None,
        bw_dev_mib_s=kib("bw_dev") if samples else None,
        bw_min_mib_s=kib("bw_min") if samples else None,
        bw_max_mib_s=kib("bw_max") if samples else None,
        bw_sample_count=samples,
    )


def _latency(section: Any, where: str) -> Latency | None:
    if section is None:
        return None
    if not isinstance(section, dict):
        raise FioFormatError(f"{where}: not an object")
    count = _int(section.get("N", 0), f"{where}: N")
    if count == 0:
        return None
    raw = section.get("percentile", {})
    if not isinstance(raw, dict):
        raise FioFormatError(f"{where}: 'percentile' is not an object")
    percentiles = {
        short: _number(raw[key], f"{where}: percentile {key}") if key in raw else None
        for short, key in _PERCENTILE_KEYS.items()
    }
    return Latency(
        count=count,
        mean_ns=_number(section.get("mean", 0), f"{where}: mean"),
        min_ns=_number(section.get("min", 0), f"{where}: min"),
        max_ns=_number(section.get("max", 0), f"{where}: max"),
        p50_ns=percentiles["p50"],
        p90_ns=percentiles["p90"],
        p99_ns=percentiles["p99"],
        p999_ns=percentiles["p999"],
    )


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FioFormatError(f"{where}: expected a number, got {value!r}")
    return float(value)


def _int(value: Any, where: str) -> int:
    return int(_number(value, where))
