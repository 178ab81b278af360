"""The device under a node's data, as iostat saw it over a phase: its await,
utilisation and throughput, for ``benchfs.health.layers`` to tell the device
from the kernel above it.

The device is found where its data directory is visible here (the local
launcher, a shared file system): the block device of the directory's file
system, a partition named by its disk as iostat names it. Elsewhere every
device of the host's iostat with I/O in the phase counts, weighted by its
requests.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis.loaders.iostat import IostatReport, IostatSample

SYS_BLOCK = Path("/sys/dev/block")


@dataclass(frozen=True)
class DeviceFigures:
    await_ms: float | None
    util_pct: float | None
    # Everything the device moved, MB/s (the job's own and anyone else's).
    device_mb_s: float
    devices: tuple[str, ...]


def data_device(directory: Path) -> str | None:
    """The disk (as iostat names it) holding ``directory``, None when not visible here."""
    try:
        dev = os.stat(directory).st_dev
    except OSError:
        return None
    block = SYS_BLOCK / f"{os.major(dev)}:{os.minor(dev)}"
    try:
        real = block.resolve(strict=True)
    except OSError:
        return None
    # A partition's directory sits inside its disk's: iostat -d lists disks.
    return real.parent.name if (real / "partition").exists() else real.name


def _unix(sample: IostatSample) -> float | None:
    if sample.timestamp is None:
        return None
    try:
        moment = pd.Timestamp(sample.timestamp)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.tz_localize("UTC")
    return float(moment.timestamp())


def device_figures(
    report: IostatReport, devices: Iterable[str] | None, start_unix: float, end_unix: float,
    op: str | None,
) -> DeviceFigures | None:  # fmt: skip
    """The phase's ``[start_unix, end_unix]`` on ``devices`` (None: every device
    with I/O): the await of ``op`` (``read``, ``write``, None: both) weighted by
    requests, the busiest utilisation, the MB/s moved. None without a sample."""
    wanted = None if devices is None else set(devices)
    # A report covers the interval that ends at its timestamp.
    samples = [s for s in report.samples
               if (wanted is None or s.device in wanted)
               and (t := _unix(s)) is not None and start_unix < t <= end_unix + 1.0]  # fmt: skip
    if wanted is None:
        samples = [s for s in samples if s.reads_per_s + s.writes_per_s > 0]
    if not samples:
        return None
    weighted = waited = 0.0
    for sample in samples:
        if op in (None, "read"):
            weighted += sample.reads_per_s
            waited += sample.reads_per_s * sample.r_await_ms
        if op in (None, "write"):
            weighted += sample.writes_per_s
            waited += sample.writes_per_s * sample.w_await_ms
    intervals = len({s.timestamp for s in samples})
    moved_kib = sum(s.read_kib_s + s.write_kib_s for s in samples)
    return DeviceFigures(
        await_ms=waited / weighted if weighted > 0 else None,
        util_pct=max(s.util_pct for s in samples),
        device_mb_s=moved_kib * 1024 / 1e6 / intervals,
        devices=tuple(sorted({s.device for s in samples})),
    )


# A host's iostat reports so far (``IostatWatches.report_so_far``); None: no watch.
ReportOf = Callable[[str | None], IostatReport | None]


@dataclass
class LiveDevices:
    """Each node's data device per live interval, from what the run's iostat
    watches already write (only what iostat wrote since the last reading is parsed)."""

    report_of: ReportOf

    def report(self, host: str | None) -> IostatReport | None:
        return self.report_of(host)

    def figures(
        self, host: str | None, kernel: Mapping[str, object], start_unix: float,
        end_unix: float, op: str | None,
    ) -> DeviceFigures | None:  # fmt: skip
        """The device the daemon's stats name (``kernel.device``) over the
        interval; None without iostat of it."""
        report = self.report(host)
        device = kernel.get("device")
        if report is None or not isinstance(device, Mapping):
            return None
        for key in ("name", "disk"):
            name = device.get(key)
            if not isinstance(name, str) or not name:
                continue
            # The report of the interval's last second comes out just after it (iostat
            # writes once a second): without it, the second before the interval's.
            found = device_figures(report, [name], start_unix, end_unix, op) or (
                device_figures(report, [name], start_unix - 1.0, end_unix, op)
            )
            if found is not None:
                return found
        return None
