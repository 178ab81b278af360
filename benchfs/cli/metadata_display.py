"""The metadata phases of a run's summary on the console: one table, a row
per phase under mdtest's name, its rates over the repetitions and its
per-item latency."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table

# (header, key of the phase row)
METADATA_COLUMNS: tuple[tuple[str, str], ...] = (
    ("max (ops/s)", "rate_max_ops_s"),
    ("min (ops/s)", "rate_min_ops_s"),
    ("mean (ops/s)", "rate_mean_ops_s"),
    ("stddev", "rate_stddev_ops_s"),
    ("items", "items"),
    ("p50 (us)", "p50_us"),
    ("p99 (us)", "p99_us"),
)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    number = float(value)
    return f"{number:,.0f}" if abs(number) >= 100 else f"{number:.3g}"


def metadata_table(summary: dict[str, Any]) -> Table | None:
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
    table = Table(
        title=f"Metadata (mdtest's names): {first.get('tasks')} ranks, "
        f"{first.get('items_per_rank')} {items} per rank, {first.get('access')}, "
        f"{first.get('repetitions')} repetition(s)",
        box=box.SIMPLE_HEAD,
        title_justify="left",
        pad_edge=False,
    )
    table.add_column("phase", no_wrap=True)
    for header, _ in METADATA_COLUMNS:
        table.add_column(header, justify="right")
    for row in rows:
        # A phase the target refuses (a directory rename on BenchFS) has no figures.
        name = str(row["phase"]) + (
            " (not supported by the target)" if row.get("unsupported") else ""
        )
        table.add_row(name, *(_cell(row.get(key)) for _, key in METADATA_COLUMNS))
    return table
