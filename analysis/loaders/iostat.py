"""Parse ``iostat -x -o JSON`` (sysstat 12) into per-device samples and summaries.

iostat's first report covers the time since boot, not the interval; it is
dropped unless asked for. Awaits are in ms, sizes in KiB, util in percent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis.errors import AnalysisError
from analysis.loaders._jsontext import decode_embedded_object


class IostatFormatError(AnalysisError, ValueError):
    """iostat output could not be parsed; names the source and position."""


@dataclass(frozen=True)
class IostatSample:
    """One device in one interval."""

    interval: int  # 0-based index among the kept intervals
    device: str
    timestamp: str | None
    reads_per_s: float
    writes_per_s: float
    read_kib_s: float
    write_kib_s: float
    r_await_ms: float
    w_await_ms: float
    aqu_sz: float
    util_pct: float


@dataclass(frozen=True)
class DeviceSummary:
    """A device over all kept intervals; awaits are weighted by the op rate."""

    device: str
    samples: int
    r_await_ms: float
    w_await_ms: float
    r_await_max_ms: float
    w_await_max_ms: float
    util_pct: float
    util_max_pct: float
    aqu_sz: float
    read_mib_s: float
    write_mib_s: float


@dataclass(frozen=True)
class IostatReport:
    source: str
    nodename: str
    samples: tuple[IostatSample, ...]

    @property
    def devices(self) -> list[str]:
        return list(dict.fromkeys(sample.device for sample in self.samples))

    def summary(self, device: str) -> DeviceSummary | None:
        """Summary of one device, or None when it has no kept sample."""
        rows = [sample for sample in self.samples if sample.device == device]
        return summarize(device, rows) if rows else None

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "interval": s.interval,
                    "device": s.device,
                    "timestamp": s.timestamp,
                    "r/s": s.reads_per_s,
                    "w/s": s.writes_per_s,
                    "rkB/s": s.read_kib_s,
                    "wkB/s": s.write_kib_s,
                    "r_await_ms": s.r_await_ms,
                    "w_await_ms": s.w_await_ms,
                    "aqu-sz": s.aqu_sz,
                    "util_pct": s.util_pct,
                }
                for s in self.samples
            ]
        )


def summarize(device: str, rows: Sequence[IostatSample]) -> DeviceSummary:
    """Summarize samples of one device (awaits weighted by reads/writes per second)."""

    def weighted(values: list[float], weights: list[float]) -> float:
        total = sum(weights)
        return sum(v * w for v, w in zip(values, weights, strict=True)) / total if total else 0.0

    count = len(rows)
    return DeviceSummary(
        device=device,
        samples=count,
        r_await_ms=weighted([r.r_await_ms for r in rows], [r.reads_per_s for r in rows]),
        w_await_ms=weighted([r.w_await_ms for r in rows], [r.writes_per_s for r in rows]),
        r_await_max_ms=max(r.r_await_ms for r in rows),
        w_await_max_ms=max(r.w_await_ms for r in rows),
        util_pct=sum(r.util_pct for r in rows) / count,
        util_max_pct=max(r.util_pct for r in rows),
        aqu_sz=sum(r.aqu_sz for r in rows) / count,
        read_mib_s=sum(r.read_kib_s for r in rows) / count / 1024,
        write_mib_s=sum(r.write_kib_s for r in rows) / count / 1024,
    )


def parse_iostat_json(text: str, source: str, *, first_is_since_boot: bool = True) -> IostatReport:
    """Parse iostat JSON; drops the first report when it is the since-boot one."""
    document = decode_embedded_object(text, source, "iostat", IostatFormatError)
    try:
        host = document["sysstat"]["hosts"][0]
        statistics = host["statistics"]
    except (KeyError, IndexError, TypeError) as exc:
        raise IostatFormatError(f"{source}: iostat JSON lacks sysstat.hosts[0].statistics") from exc
    if not isinstance(statistics, list):
        raise IostatFormatError(f"{source}: iostat 'statistics' is not a list")
    kept = statistics[1:] if first_is_since_boot else statistics
    first = 1 if first_is_since_boot else 0
    samples = [
        sample
        for interval, report in enumerate(kept)
        for sample in report_samples(report, interval, f"{source}: report #{interval + first}")
    ]
    return IostatReport(
        source=source, nodename=str(host.get("nodename", "")), samples=tuple(samples)
    )


def report_samples(report: Any, interval: int, where: str) -> list[IostatSample]:
    """The samples of one iostat report (one element of ``statistics``), as
    interval ``interval``; an error names ``where``."""
    if not isinstance(report, dict) or not isinstance(report.get("disk"), list):
        raise IostatFormatError(f"{where}: no 'disk' list (was iostat run with -d -x?)")
    timestamp = report.get("timestamp")
    return [_sample(disk, interval, timestamp, where) for disk in report["disk"]]


def _sample(disk: Any, interval: int, timestamp: Any, where: str) -> IostatSample:
    if not isinstance(disk, dict) or "disk_device" not in disk:
        raise IostatFormatError(f"{where}: disk entry without 'disk_device'")
    where = f"{where} ({disk['disk_device']})"

    def number(key: str) -> float:
        value = disk.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise IostatFormatError(f"{where}: '{key}' missing or not a number (need iostat -x)")
        return float(value)

    return IostatSample(
        interval=interval,
        device=str(disk["disk_device"]),
        timestamp=str(timestamp) if timestamp is not None else None,
        reads_per_s=number("r/s"),
        writes_per_s=number("w/s"),
        read_kib_s=number("rkB/s"),
        write_kib_s=number("wkB/s"),
        r_await_ms=number("r_await"),
        w_await_ms=number("w_await"),
        aqu_sz=number("aqu-sz"),
        util_pct=number("util"),
    )


def iostat_frame(text: str, source: str) -> pd.DataFrame:
    """iostat JSON as a frame of samples, with ``time_ns`` (Unix epoch ns) from
    the report timestamps when iostat printed ISO ones (``S_TIME_FORMAT=ISO``)."""
    frame = parse_iostat_json(text, source).to_frame()
    if "timestamp" in frame.columns:
        stamps = pd.to_datetime(frame["timestamp"], utc=True, errors="coerce", format="ISO8601")
        # pandas may pick micro- or nanosecond resolution; the frame wants ns
        frame["time_ns"] = stamps.dt.as_unit("ns").astype("int64").where(stamps.notna())
    return frame
