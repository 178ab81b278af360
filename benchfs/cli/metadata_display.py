"""The metadata phases of a run's summary on the console: one table, a row
per phase under mdtest's name, its mean rate over the repetitions and its
per-item latency (the other rates with --wide)."""

from __future__ import annotations

from typing import Any

from analysis.figures import figure
from benchfs.cli.tables import Column, Grid

# (header, key of the phase row, shown by default)
METADATA_COLUMNS: tuple[tuple[str, str, bool], ...] = (
    ("mean (ops/s)", "rate_mean_ops_s", True),
    ("items", "items", True),
    ("p50 (us)", "p50_us", True),
    ("p99 (us)", "p99_us", True),
    ("max (ops/s)", "rate_max_ops_s", False),
    ("min (ops/s)", "rate_min_ops_s", False),
    ("stddev (ops/s)", "rate_stddev_ops_s", False),
)


def _cell(value: Any) -> str:
    return figure(None if value is None else float(value))


def metadata_grid(summary: dict[str, Any]) -> Grid | None:
    """The metadata phases of ``summary``, None when it has none."""
    rows = [row for row in summary.get("phases", []) if row.get("kind") == "metadata"]
    if not rows:
        return None
    # The title speaks of the items: the tree's rows count its directories.
    first = next((row for row in rows if row.get("object") != "tree"), rows[0])
    objects = {row.get("object") for row in rows if row.get("object") != "tree"}
    items = "items"  # files and directories
    if len(objects) == 1:
        items = {"file": "files", "directory": "directories"}.get(objects.pop(), "items")
    grid = Grid(
        f"Metadata (mdtest's names): {first.get('tasks')} ranks, "
        f"{first.get('items_per_rank')} {items} per rank, {first.get('access')}, "
        f"{first.get('repetitions')} repetition(s)",
        [Column("phase", key=True),
         *(Column(header, wide=not shown) for header, _, shown in METADATA_COLUMNS)],
    )  # fmt: skip
    for row in rows:
        # A phase the target refuses (a directory rename on BenchFS) has no figures.
        name = str(row["phase"]) + (
            " (not supported by the target)" if row.get("unsupported") else ""
        )
        grid.add_row(name, *(_cell(row.get(key)) for _, key, _ in METADATA_COLUMNS))
    return grid
