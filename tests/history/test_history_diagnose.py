"""`benchfs diagnose` records the nodes it measured in the history, for real."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import environment

from benchfs.history.store import History, Location

# Run from another directory, the source tree must still be the benchfs imported.
SOURCE = {**environment(), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
needs_tools = pytest.mark.skipif(
    shutil.which("fio") is None or shutil.which("iostat") is None, reason="needs fio and iostat"
)


def diagnose(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchfs", "diagnose", *args],
        capture_output=True, text=True, env=environment(), timeout=600,
    )  # fmt: skip


def test_nodes_that_could_not_be_measured_are_recorded_flagged(tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = diagnose("--nodes", "local:2", "--dir", str(tmp_path), "--deadline", "1", "--quick",
                    "--json", "--results-dir", str(results))  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"history: completed run recorded in {results / 'history.sqlite'}" not in done.stderr
    assert f"history: failed run recorded in {results / 'history.sqlite'}" in done.stderr
    runs = History(Location(path=results / "history.sqlite")).node_runs()
    assert [(r.kind, r.row.node, r.row.role, r.row.flagged) for r in runs] == [
        ("diagnose", "local0", "measured", True), ("diagnose", "local1", "measured", True),
    ]  # fmt: skip
    assert runs[0].row.reason == "diagnose could not run: diagnose worker on local0 did not " \
        "finish within 1 s"  # fmt: skip


def test_without_a_results_root_diagnose_records_nothing(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "diagnose", "--dir", str(tmp_path / "nope"), "--quick"],
        capture_output=True, text=True, env=SOURCE, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert "history" not in done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == []


@needs_tools
@pytest.mark.slow
def test_measured_nodes_go_into_the_history_of_the_results_root(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "results").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "diagnose", "--nodes", "local:2", "--dir", str(work),
         "--quick", "--deadline", "600", "--output", str(tmp_path / "out")],
        capture_output=True, text=True, env=SOURCE, timeout=900, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    assert "history: completed run recorded in results/history.sqlite" in done.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "benchfs", "nodes", "--json"],
        capture_output=True, text=True, env=SOURCE, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    nodes = {node["node"]: node for node in json.loads(shown.stdout)["nodes"]}
    assert sorted(nodes) == ["local0", "local1"]
    assert all(node["runs_seen"] == 1 for node in nodes.values())
    (row, _) = History(Location(path=tmp_path / "results" / "history.sqlite")).node_runs()
    assert row.row.preflight_read_MiB_s is not None and row.row.preflight_read_MiB_s > 0
    assert row.results_dir == str((tmp_path / "out").resolve())
