"""A node's status from its runs, and what `benchfs nodes` prints of it: the field
reports' table ("problem nodes from several validations") made from a history."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from damaged import record
from table_checks import assert_fits
from typer.testing import CliRunner

from benchfs.cli.main import app
from benchfs.config.model import HistoryConfig
from benchfs.errors import ConfigError
from benchfs.history.consult import consult
from benchfs.history.model import FigureRow, NodeRow, NodeRun, RunRecord
from benchfs.history.status import Rules, summarize_node
from benchfs.history.store import History, Location
from benchfs.history.views import NODE_HEADERS, since_stamp

runner = CliRunner()


def runs_of(flags: str, *, start_hour: int = 0, left_out: str = "") -> list[NodeRun]:
    """A node's runs from a string: ``F`` flagged, ``.`` clean, ``x`` left out on its history."""
    found = []
    for index, flag in enumerate(flags):
        row = NodeRow(
            node="n", role="excluded" if flag == "x" else "used", flagged=flag == "F",
            excluded_by="history" if flag == "x" else None,
            metric="read storage op mean" if flag == "F" else "", layer="kernel",
            value=200.0 + index if flag == "F" else None, typical=1.0, unit="ms",
        )  # fmt: skip
        stamp = f"2026-12-01T{start_hour + index:02d}:00:00Z"
        found.append(NodeRun(index, f"u{index}", "c", f"r{index}", "run", stamp, "completed",
                             f"/r/{index}", row))  # fmt: skip
    return found


@pytest.mark.parametrize(
    ("flags", "status", "acted_on"),
    [
        ("...", "healthy", False),
        ("..F", "new", False),
        (".FF", "confirmed", True),
        ("FFx", "confirmed", True),  # left out on its history: not seen, still confirmed
        ("F.F", "intermittent", True),
        ("F...F", "intermittent", False),  # flagged again, once in its last 3 runs
        ("FF.", "recovered", False),
        ("F..", "recovered", False),
    ],
)
def test_status_from_the_runs(flags: str, status: str, acted_on: bool) -> None:
    summary = summarize_node(runs_of(flags), Rules(flagged_runs=2, last_runs=3))
    assert (summary.status, summary.acted_on) == (status, acted_on), summary.reason
    assert summary.runs_flagged == flags.count("F")
    assert summary.runs_left_out == flags.count("x")


def test_the_worst_run_speaks_for_the_node() -> None:
    summary = summarize_node(runs_of("FF"), Rules())
    assert summary.worst is not None and summary.worst.row.value == 201.0
    assert summary.reason == (
        "flagged in 2 of its last 2 runs: read storage op mean 201 ms (1 ms on the others) (kernel)"
    )


def test_the_preflight_counts_only_recent_runs() -> None:
    runs = runs_of("FF", start_hour=0)
    config = HistoryConfig(max_age_h=24)
    (suspect,) = consult(runs, ["n"], config, now=datetime(2026, 12, 1, 12, tzinfo=UTC))
    assert suspect.action == "exclude" and suspect.evidence["recent_flags"] == [True, True]
    assert consult(runs, ["n"], config, now=datetime(2026, 12, 3, 12, tzinfo=UTC)) == []
    (flagged,) = consult(runs, ["n"], HistoryConfig(preflight="flag"),
                         now=datetime(2026, 12, 1, 12, tzinfo=UTC))  # fmt: skip
    assert flagged.action == "flag"


def test_since_takes_dates_times_and_ages() -> None:
    now = datetime(2026, 12, 8, 12, 0, tzinfo=UTC)
    assert since_stamp("7d", now) == "2026-12-01T12:00:00Z"
    assert since_stamp("90m", now) == "2026-12-08T10:30:00Z"
    assert since_stamp("2026-12-01", now) == "2026-12-01T00:00:00Z"
    assert since_stamp("2026-12-01T10:00+01:00", now) == "2026-12-01T09:00:00Z"
    with pytest.raises(ConfigError, match="--since yesterday: expected a date"):
        since_stamp("yesterday", now)


def test_history_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="must not hold a password"):
        HistoryConfig(url="postgresql://admin:secret@db.example/history")
    with pytest.raises(ValueError, match="cannot exceed last_runs"):
        HistoryConfig(flagged_runs=4, last_runs=3)


# The field reports' three validations (docs/DIAGNOSE.md shows this table).
FIELD = [
    ("2026-01-16T09:53:00Z", {"bnode045": 4340.0, "bnode004": 188.0, "bnode013": 68.6}),
    ("2026-01-16T23:07:00Z", {"bnode025": 2684.0, "bnode026": 894.0, "bnode019": 596.0}),
    ("2026-01-16T23:44:00Z", {"bnode079": 3161.0, "bnode081": 842.0, "bnode026": 179.0}),
]
NODES = ["bnode004", "bnode013", "bnode019", "bnode025", "bnode026", "bnode045", "bnode079",
         "bnode081"]  # fmt: skip


def field_history(path: Path) -> History:
    store = History(Location(path=path))
    for index, (started, slow) in enumerate(FIELD):
        base = record(uid=f"v{index}", started=started)
        rows = [
            NodeRow(node=node, role="used", flagged=node in slow,
                    metric="read storage op mean" if node in slow else "",
                    layer="device" if node in slow else "", pattern="whole run",
                    value=slow.get(node), typical=12.9 if node in slow else None,
                    unit="ms" if node in slow else "", mean_ms=slow.get(node, 12.9),
                    reason=f"reads {slow[node]:g} ms per op vs 12.9 ms" if node in slow else "")
            for node in NODES
        ]  # fmt: skip
        figures = [FigureRow("read", "bwMiB", rep, 9800.0 + 60 * rep) for rep in range(4)]
        store.write(RunRecord(run=replace(base.run, label=f"ior-{index}", cluster="bnode"),
                              nodes=rows, figures=figures))  # fmt: skip
    return store


def test_the_field_reports_table_in_80_columns(tmp_path: Path) -> None:
    field_history(tmp_path / "h.sqlite")
    result = runner.invoke(
        app, ["nodes", "--url", str(tmp_path / "h.sqlite")], env={"COLUMNS": "80"}
    )
    assert result.exit_code == 0, result.output
    assert_fits(result.output, 80, figures=["4,340 ms", "3,161 ms"], headers=NODE_HEADERS)
    statuses = {line.split()[0]: line.split()[1] for line in result.output.splitlines()
                if line.startswith("bnode") and not line.split()[0].endswith(":")}  # fmt: skip
    assert statuses == {
        "bnode026": "confirmed", "bnode079": "new", "bnode081": "new",
        "bnode004": "recovered", "bnode013": "recovered", "bnode019": "recovered",
        "bnode025": "recovered", "bnode045": "recovered",
    }  # fmt: skip
    assert "bnode026: confirmed: flagged in 2 of its last 3 runs" in result.output
    document = json.loads(
        runner.invoke(app, ["nodes", "--url", str(tmp_path / "h.sqlite"), "--json"]).output
    )
    worst = {node["node"]: node["worst"] for node in document["nodes"]}
    assert worst["bnode026"]["value"] == 894.0 and worst["bnode026"]["started_at"].startswith(
        "2026-01-16T23:07")  # fmt: skip
    hint = runner.invoke(app, ["nodes", "--url", str(tmp_path / "h.sqlite"), "--drain-hint"])
    assert hint.output.splitlines() == [
        'scontrol update nodename=bnode026 state=drain reason="benchfs: confirmed, flagged 2 '
        'of last 3 runs since 01-16 23:07: read storage op mean 894 ms (12.9 ms on the others)"'
    ]
    since = runner.invoke(app, ["nodes", "--url", str(tmp_path / "h.sqlite"), "--since",
                                "2026-01-16T23:00", "--json"])  # fmt: skip
    assert {node["runs_seen"] for node in json.loads(since.output)["nodes"]} == {2}
