"""The terminal table of a suite run: IO500's phases with their figures and
times, and the score, as the reference prints its ``[RESULT]`` and
``[SCORE ]`` lines (``[INVALID]`` where its rules find the result not valid,
with the reasons)."""

from __future__ import annotations

from typing import Any

from benchfs.cli.tables import Column, Grid


def _time_s(row: dict[str, Any]) -> float | None:
    value = row.get("time_mean_s") if row.get("kind") == "metadata" else row.get("MeanTime")
    return None if value is None else float(value)


def suite_grid(summary: dict[str, Any]) -> Grid | None:
    """None for a summary that is not a suite's."""
    suite = summary.get("suite")
    if not isinstance(suite, dict):
        return None
    mounted = " through the mount" if suite.get("interface") == "mount" else ""
    valid = summary.get("valid") is not False
    caption = (
        f"score {summary['score']:.6f}{'' if valid else ' [INVALID]'}: bandwidth "
        f"{summary['bandwidth']:.6f} GiB/s, metadata {summary['metadata']:.6f} kIOPS"
    )
    if not valid:
        reasons = summary.get("invalid_reasons") or []
        caption += "\nnot a valid IO500 result:" + "".join(f"\n- {r}" for r in reasons)
    grid = Grid(
        f"{suite.get('name')}: {suite.get('tasks')} ranks, stonewall "
        f"{suite.get('stonewall_s'):g} s, {suite.get('tool')} on {suite.get('target')}{mounted}",
        [Column("phase", key=True), Column("result", kind="figure"), Column("unit", kind="name"),
         Column("time (s)", kind="figure"), Column("stonewalled", kind="figure"),
         Column("valid", kind="figure")],
        caption=caption,
    )  # fmt: skip
    for row in summary["phases"]:
        time_s = _time_s(row)
        grid.add_row(
            str(row["phase"]),
            f"{float(row.get('io500_rate') or 0.0):.6f}",
            str(row.get("io500_unit", "")),
            "-" if time_s is None else f"{time_s:.3f}",
            "yes" if row.get("stonewalled") else "",
            "INVALID" if row.get("valid") is False else "",
        )
    return grid
