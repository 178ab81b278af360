"""The data phases of a run's summary on the console: one headline table, a
row per phase (bandwidth, time, p50/p99, stonewalled, verified), and with
several repetitions a table per phase of its repetitions. Grids of
``benchfs.cli.tables``: they fit the terminal, the rest of the figures
behind --wide."""

from __future__ import annotations

from typing import Any

from analysis.figures import figure
from benchfs.cli.tables import Column, Grid
from benchfs.config.sizes import format_size

# (header with unit, key of a phase row, key of a repetition row, scale, shown by default)
PHASE_COLUMNS: tuple[tuple[str, str, str, float, bool], ...] = (
    ("bw (MiB/s)", "bwMeanMIB", "bwMiB", 1.0, True),
    ("time (s)", "MeanTime", "totalTime", 1.0, True),
    ("p50 (ms)", "p50_us", "p50_us", 1e-3, True),
    ("p99 (ms)", "p99_us", "p99_us", 1e-3, True),
    ("data (MiB)", "xsizeMiB", "", 1.0, False),
    ("first done (s)", "first_done_s", "first_done_s", 1.0, False),
    ("last done (s)", "last_done_s", "last_done_s", 1.0, False),
    ("p90 (ms)", "p90_us", "p90_us", 1e-3, False),
    ("p99.9 (ms)", "p99.9_us", "p99.9_us", 1e-3, False),
    ("bwMaxMIB (MiB/s)", "bwMaxMIB", "", 1.0, False),
    ("bwMinMIB (MiB/s)", "bwMinMIB", "", 1.0, False),
    ("bwStdMIB (MiB/s)", "bwStdMIB", "", 1.0, False),
)


def scaled(value: Any, scale: float = 1.0) -> str:
    """``value`` (None: not measured) times ``scale``, as every table prints a figure."""
    return figure(None if value is None else float(value) * scale)


def reached(phase_row: dict[str, Any]) -> str:
    """What a phase measured, for its table's title: a mount figure is never
    taken for a native one."""
    target = str(phase_row.get("target") or "benchfs")
    if target != "benchfs":
        return target
    if phase_row.get("interface") == "mount":
        return "BenchFS through the mount"
    return "BenchFS native client"


def _verified(row: dict[str, Any], verify: bool | None) -> str:
    """Whether the data read back was checked: only reads are, and only with
    ``workload.verify``; a tool's rows say nothing."""
    if row.get("phase") != "read" or verify is None:
        return "-"
    if not verify:
        return "no"
    errors = int(row.get("verify_errors") or 0)
    return "yes" if errors == 0 else f"{errors:,} errors"


def _yes_no(value: Any) -> str:
    return "-" if value is None else ("yes" if value else "no")


def data_phase_grids(summary: dict[str, Any]) -> list[Grid]:
    """The headline grid of the data phases, then one per phase with its
    repetitions when there are several; none without data phases."""
    rows = [row for row in summary.get("phases", []) if row.get("kind") != "metadata"]
    if not rows:
        return []
    parameters = summary.get("parameters") or {}
    verify = parameters.get("verify")
    first = rows[0]
    transfer = first.get("transferSize")
    title = (
        f"Data phases on {reached(first)}: {first.get('numTasks') or '-'} ranks, "
        f"queue depth {first.get('queue_depth') or '-'}"
        + (f", {format_size(int(transfer))} transfers" if transfer else "")
    )
    columns = [Column("phase", key=True)]
    columns += [Column(header, wide=not shown) for header, _, _, _, shown in PHASE_COLUMNS]
    columns += [Column("stonewalled"), Column("verified"), Column("errors", wide=True)]
    headline = Grid(title, columns, transpose=True)
    for row in rows:
        headline.add_row(
            str(row["phase"]),
            *(scaled(row.get(key), scale) for _, key, _, scale, _ in PHASE_COLUMNS),
            _yes_no(row.get("stonewalled")),
            _verified(row, verify),
            scaled(row.get("errors")),
        )
    grids = [headline]
    for row in rows:
        repetitions = [r for r in summary.get("repetitions", []) if r["phase"] == row["phase"]]
        if len(repetitions) < 2:
            continue
        shown = [c for c in PHASE_COLUMNS if c[2]]
        grid = Grid(
            f"{row['phase']}: {len(repetitions)} repetitions",
            [Column("rep", key=True), *(Column(h, wide=not d) for h, _, _, _, d in shown)],
        )
        for repetition in repetitions:
            grid.add_row(
                str(repetition["repetition"]),
                *(scaled(repetition.get(key), scale) for _, _, key, scale, _ in shown),
            )
        grids.append(grid)
    return grids
