"""The terminal table of a suite run: every phase with its IO500 figure and
unit, and the score line, as IO500 prints its [RESULT] and [SCORE ] lines."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from benchfs.cli.suite_display import suite_grid
from benchfs.cli.tables import print_grid


def rendered(summary: dict[str, Any]) -> str:
    grid = suite_grid(summary)
    assert grid is not None
    console = Console(width=120, record=True)
    print_grid(console, grid)
    return " ".join(console.export_text().split())  # the caption wraps at the table width


def test_the_table_shows_every_phase_and_the_score() -> None:
    summary = {
        "suite": {
            "name": "io500-quick",
            "tasks": 4,
            "stonewall_s": 1.0,
            "tool": "builtin",
            "target": "benchfs",
        },
        "score": 7.096675,
        "bandwidth": 0.172107,
        "metadata": 292.625029,
        "phases": [
            {
                "phase": "ior-easy-write",
                "kind": "data",
                "io500_rate": 0.18662,
                "io500_unit": "GiB/s",
                "MeanTime": 0.027,
                "stonewalled": True,
            },
            {
                "phase": "find",
                "kind": "metadata",
                "io500_rate": 1486.435084,
                "io500_unit": "kIOPS",
                "time_mean_s": 0.118,
            },
        ],
    }
    text = rendered(summary)
    assert "io500-quick: 4 ranks, stonewall 1 s, builtin on benchfs" in text
    assert "ior-easy-write" in text and "0.186620" in text and "GiB/s" in text
    assert "find" in text and "1486.435084" in text and "0.118" in text
    assert "score 7.096675: bandwidth 0.172107 GiB/s, metadata 292.625029 kIOPS" in text


def test_a_summary_that_is_not_a_suite_has_no_table() -> None:
    assert suite_grid({"phases": []}) is None


def test_an_invalid_result_is_marked_with_its_reasons() -> None:
    summary = {
        "suite": {"name": "io500-quick", "tasks": 2, "stonewall_s": 1.0, "tool": "builtin",
                  "target": "benchfs"},
        "score": 1.5, "bandwidth": 1.0, "metadata": 2.25, "valid": False,
        "invalid_reasons": ["io500-quick is a short test run with small sizes: never a valid "
                            "IO500 result", "find: find found no file matching its criteria"],
        "phases": [{"phase": "find", "kind": "metadata", "io500_rate": 2.25,
                    "io500_unit": "kIOPS", "time_mean_s": 0.1, "valid": False}],
    }  # fmt: skip
    text = rendered(summary)
    assert "score 1.500000 [INVALID]" in text and "INVALID" in text.split("find", 1)[1]
    assert "not a valid IO500 result: - io500-quick is a short test run" in text
    assert "- find: find found no file matching its criteria" in text
    assert "[INVALID]" not in rendered({**summary, "valid": True, "invalid_reasons": []})
