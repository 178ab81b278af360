"""The SQLite history for real: rows written and read back, replaced rather than
doubled, many writers at once, and histories that cannot be written named in
one line (tests/history/damaged.py makes them)."""

from __future__ import annotations

import multiprocessing
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from damaged import KINDS, REASONS, damaged, record
from run_helpers import environment

from benchfs.errors import HistoryError
from benchfs.history.model import FigureRow, NodeRow, RunRecord, VerdictRow
from benchfs.history.store import History, Location


def history(path: Path, timeout_s: float = 30.0) -> History:
    return History(Location(path=path), lock_timeout_s=timeout_s)


def test_a_run_written_twice_is_one_run_with_its_rows(tmp_path: Path) -> None:
    store = history(tmp_path / "history.sqlite")
    assert store.node_runs() == [] and not (tmp_path / "history.sqlite").exists()
    base = record(uid="one", node="n1")
    verdict = VerdictRow(node="n1", source="engine", flagged=True, metric="read storage op mean",
                         layer="above the device", reason="slow", value=float("nan"))  # fmt: skip
    one = RunRecord(
        run=base.run,
        nodes=[NodeRow(node="n1", role="used", flagged=True, value=194.0, unit="ms")],
        verdicts=[verdict],
        figures=[FigureRow("read", "bwMiB", 0, 80.0), FigureRow("read", "bwMiB", 1, 82.0)],
    )
    store.write(one)
    store.write(one)
    (run,) = store.runs_with_ids()
    assert run[1] == one.run
    (node,) = store.node_runs()
    assert node.row == one.nodes[0] and node.judged
    assert [row.value for row in store.figures([run[0]])[run[0]]] == [80.0, 82.0]
    with sqlite3.connect(tmp_path / "history.sqlite") as conn:
        assert conn.execute("SELECT count(*) FROM verdicts").fetchone() == (1,)
        # NaN is kept as NULL, not as a float neither database reads back alike.
        assert conn.execute("SELECT value FROM verdicts").fetchone() == (None,)


def test_filters_by_cluster_node_and_time(tmp_path: Path) -> None:
    store = history(tmp_path / "h.sqlite")
    store.write(record(uid="early", node="a", started="2026-11-01T00:00:00Z"))
    store.write(record(uid="late", node="b", started="2026-12-01T00:00:00Z"))
    assert [r.row.node for r in store.node_runs(since="2026-11-15T00:00:00Z")] == ["b"]
    assert [r.row.node for r in store.node_runs(node="a")] == ["a"]
    assert store.node_runs(cluster="elsewhere") == []


def _write_many(path: str, writer: int, count: int) -> None:
    store = History(Location(path=Path(path)), lock_timeout_s=60)
    for index in range(count):
        store.write(record(uid=f"w{writer}-{index}", node=f"n{writer}"))


def test_writers_at_once_are_all_recorded(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_write_many, args=(str(path), w, 10)) for w in range(4)]
    for process in writers:
        process.start()
    for process in writers:
        process.join(timeout=120)
        assert process.exitcode == 0
    runs = history(path).runs()
    assert len(runs) == 40 and len({run.uid for run in runs}) == 40


@pytest.mark.parametrize("kind", KINDS)
def test_a_history_that_cannot_be_written_is_one_line_naming_the_file(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "history.sqlite"
    with damaged(path, kind):
        with pytest.raises(HistoryError) as raised:
            history(path, timeout_s=1).write(record(uid="new"))
        message = str(raised.value)
        assert message.startswith(f"{path}: ") and "\n" not in message
        assert REASONS[kind] in message
        if kind == "locked":
            return  # readers wait for an exclusive lock too: `benchfs nodes` would wait 30 s
        done = subprocess.run(
            [sys.executable, "-m", "benchfs", "nodes", "--url", str(path)],
            capture_output=True, text=True, env=environment(), timeout=60,
        )  # fmt: skip
        if kind == "read-only":  # reading needs no write access
            assert done.returncode == 0, done.stderr
            assert "node6" in done.stdout
        else:
            assert done.returncode == 2, done.stdout
            (line,) = done.stderr.splitlines()
            assert line.startswith(f"error: {path}: ") and REASONS[kind] in line


def test_not_a_database_and_another_programs_database_are_refused(tmp_path: Path) -> None:
    text = tmp_path / "notes.sqlite"
    text.write_text("these are notes\n" * 20)
    with pytest.raises(HistoryError, match="not a SQLite database"):
        history(text).write(record())
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE accounts (id INTEGER)")
    with pytest.raises(HistoryError, match="holds other tables: accounts"):
        history(other).write(record())


def test_a_read_only_history_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    with damaged(path, "read-only"):
        assert len(history(path).runs()) == 12
