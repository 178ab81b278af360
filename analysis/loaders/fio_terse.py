"""Parse fio's terse output (``--output-format=terse``, ``--minimal``) into a FioReport.

One line per job (per group with ``group_reporting``), fields split by
``;``, in the order fio's HOWTO gives for terse versions 2 to 5: a header
(version, fio version from v3 on, job name, group id, error), then per
direction (read, write, and trim except in v3) the I/O in KiB, bandwidth
in KiB/s, IOPS, runtime in ms, submission, completion and total latency
(min, max, mean, stdev in microseconds) with 20 completion percentiles
(``P%=value``), bandwidth statistics and, in v5, IOPS statistics. What
follows (CPU, depths, latency buckets, disk utilization, the description)
is not read. Other lines (fio's ``name: (g=0): rw=...`` banner when a job
file has several jobs) are skipped.

What terse does not say, the report leaves unknown: the job options (block
size, engine, queue depth), the number of I/Os (taken as IOPS x runtime,
exact to fio's whole IOPS), the latency sample count (the same estimate)
and fractions of a microsecond in latency minima, maxima and percentiles.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from analysis.loaders.fio import KIB, Direction, FioFormatError, FioJobResult, FioReport, Latency

# version -> fields before the first direction, fields per direction, directions.
_LAYOUT = {2: (4, 41, 3), 3: (5, 41, 2), 4: (5, 41, 3), 5: (5, 47, 3)}
_PERCENTILE_COUNT = 20
_PERCENTILE = re.compile(r"^(\d+(?:\.\d+)?)%=(\d+)$")
_PERCENTILE_NAMES = {"50.000000": "p50", "90.000000": "p90", "99.000000": "p99",
                     "99.900000": "p999"}  # fmt: skip
# A terse line starts with its version; v3 and later name fio's version next.
TERSE_LINE = re.compile(r"^(?:[345];fio-[^;\n]*|2);[^\n]*%=", re.MULTILINE)


@dataclass(frozen=True)
class _Line:
    """The fields of one terse line, with where they came from for errors."""

    fields: list[str]
    where: str

    def number(self, index: int, what: str) -> float:
        text = self.fields[index]
        try:
            return float(text.rstrip("%"))
        except ValueError:
            raise FioFormatError(
                f"{self.where}: field {index + 1} ({what}) is not a number: {text!r}"
            ) from None


def is_terse_line(line: str) -> bool:
    """Whether ``line`` is a job line of fio's terse output, of a version this reads."""
    fields = line.rstrip("\n").split(";")
    layout = _LAYOUT.get(int(fields[0])) if fields[0].isdigit() else None
    if layout is None:
        return False
    header, per_direction, directions = layout
    if len(fields) < header + per_direction * directions:
        return False
    return _PERCENTILE.match(fields[header + 12]) is not None


def parse_fio_terse(text: str, source: str) -> FioReport:
    """Every job line of terse output in ``text``; ``source`` names it in errors."""
    jobs: list[FioJobResult] = []
    versions: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        if not TERSE_LINE.match(raw):
            continue
        line = _Line(raw.split(";"), f"{source}:{number}")
        if not is_terse_line(raw):
            raise FioFormatError(
                f"{line.where}: a fio terse line of {len(line.fields)} fields, too few for "
                f"terse version {line.fields[0]} (cut short?)"
            )
        version = int(line.fields[0])
        header = _LAYOUT[version][0]
        if version >= 3:
            versions.add(line.fields[1])
        jobs.append(_job(line, version, header))
    if not jobs:
        raise FioFormatError(f"{source}: no fio terse line found")
    return FioReport(
        source=source,
        fio_version=", ".join(sorted(versions)),
        jobs=tuple(jobs),
        output_format="terse",
    )


def _job(line: _Line, version: int, header: int) -> FioJobResult:
    _, per_direction, count = _LAYOUT[version]
    name = line.fields[header - 3]
    line = _Line(line.fields, f"{line.where}: job {name}")
    directions = [
        _direction(line, header + per_direction * index, version) for index in range(count)
    ]
    trim = directions[2] if count == 3 else Direction()
    return FioJobResult(
        name=name,
        error=int(line.number(header - 1, "error")),
        read=directions[0],
        write=directions[1],
        trim=trim,
        sync=None,
        runtime_s=max(d.runtime_s for d in directions),
    )


def _direction(line: _Line, start: int, version: int) -> Direction:
    def at(offset: int, what: str) -> float:
        return line.number(start + offset, what)

    kib, runtime_ms, iops = at(0, "I/O KiB"), at(3, "runtime ms"), at(2, "IOPS")
    ios = round(iops * runtime_ms / 1000)
    if kib > 0:
        ios = max(ios, 1)
    if ios == 0:
        return Direction()
    samples = int(at(41, "bandwidth samples")) if version >= 5 else 0
    bw_known = samples > 0 or (version < 5 and at(37, "bandwidth max") > 0)
    return Direction(
        io_bytes=int(kib) * KIB,
        bw_mib_s=at(1, "bandwidth KiB/s") / KIB,
        iops=iops,
        runtime_s=runtime_ms / 1000.0,
        total_ios=ios,
        clat=_latency(line, start + 8, ios, percentiles=start + 12),
        lat=_latency(line, start + 32, ios, percentiles=None),
        bw_mean_mib_s=at(39, "bandwidth mean") / KIB if bw_known else None,
        bw_dev_mib_s=at(40, "bandwidth stdev") / KIB if bw_known else None,
        bw_min_mib_s=at(36, "bandwidth min") / KIB if bw_known else None,
        bw_max_mib_s=at(37, "bandwidth max") / KIB if bw_known else None,
        bw_sample_count=samples,
    )


def _latency(line: _Line, start: int, count: int, percentiles: int | None) -> Latency:
    """min, max, mean, stdev in microseconds at ``start``; percentiles after them."""
    found: dict[str, float] = {}
    if percentiles is not None:
        for index in range(percentiles, percentiles + _PERCENTILE_COUNT):
            match = _PERCENTILE.match(line.fields[index])
            if match is None:
                raise FioFormatError(
                    f"{line.where}: field {index + 1} is not a percentile (P%=value): "
                    f"{line.fields[index]!r}"
                )
            short = _PERCENTILE_NAMES.get(f"{float(match[1]):.6f}")
            if short is not None:
                found[short] = float(match[2]) * 1000
    return Latency(
        count=count,
        min_ns=line.number(start, "latency min") * 1000,
        max_ns=line.number(start + 1, "latency max") * 1000,
        mean_ns=line.number(start + 2, "latency mean") * 1000,
        p50_ns=found.get("p50"),
        p90_ns=found.get("p90"),
        p99_ns=found.get("p99"),
        p999_ns=found.get("p999"),
    )
