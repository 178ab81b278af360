"""The same history through a real PostgreSQL server the test starts itself
(tests/history/postgres.py), skipped with the reason where the server is not
installed (`make system` installs Debian's postgresql)."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from damaged import record
from postgres import postgres_server, postgres_unavailable
from run_helpers import environment, run_dirs, small_args
from sqlalchemy import create_engine, text

from benchfs.errors import HistoryError
from benchfs.history.record import record_run_dir
from benchfs.history.store import History, Location

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(postgres_unavailable() is not None, reason=str(postgres_unavailable())),
]


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with postgres_server() as url:
        yield url


def _write_many(url: str, writer: int, count: int) -> None:
    store = History(Location(url=url), lock_timeout_s=60)
    for index in range(count):
        store.write(record(uid=f"w{writer}-{index}", node=f"n{writer}"))


@pytest.mark.usefixtures("whole_lines")
def test_a_run_writes_the_same_rows_to_postgresql_as_to_sqlite(
    tmp_path: Path, postgres_url: str
) -> None:
    args = small_args(tmp_path, "--set", "cluster.local_nodes=2",
                      "--set", f"history.url={postgres_url}")  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "run", *args],
        capture_output=True, text=True, env=environment(), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"history: completed run recorded in {postgres_url}" in done.stderr.splitlines()
    shown = subprocess.run(
        [sys.executable, "-m", "benchfs", "nodes", "--url", postgres_url, "--json"],
        capture_output=True, text=True, env=environment(), timeout=120,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    nodes = json.loads(shown.stdout)["nodes"]
    assert sorted(node["node"] for node in nodes) == ["local0", "local1"]
    assert all(node["status"] == "healthy" and node["runs_seen"] == 1 for node in nodes)

    (run_dir,) = run_dirs(tmp_path / "results")
    sqlite = History(Location(path=tmp_path / "copy.sqlite"))
    record_run_dir(sqlite, run_dir)
    postgres = History(Location(url=postgres_url))
    assert [run for _, run in postgres.runs_with_ids()] == sqlite.runs()
    assert [r.row for r in postgres.node_runs()] == [r.row for r in sqlite.node_runs()]
    (pg_id, _), (sqlite_id, _) = postgres.runs_with_ids()[0], sqlite.runs_with_ids()[0]
    assert postgres.figures([pg_id])[pg_id] == sqlite.figures([sqlite_id])[sqlite_id]
    assert postgres.figures([pg_id])[pg_id]  # the run's repetitions are there


def test_writers_at_once_on_a_new_postgresql_database_are_all_recorded(postgres_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_write_many, args=(postgres_url, w, 5)) for w in range(4)]
    for process in writers:
        process.start()
    for process in writers:
        process.join(timeout=120)
        assert process.exitcode == 0
    runs = History(Location(url=postgres_url)).runs()
    assert len({run.uid for run in runs}) == 20


def test_a_newer_schema_on_postgresql_is_refused_naming_the_url(postgres_url: str) -> None:
    store = History(Location(url=postgres_url))
    store.write(record())
    engine = create_engine(Location(url=postgres_url).engine_url(read_only=False))
    with engine.begin() as conn:
        conn.execute(text("UPDATE meta SET value = '99' WHERE key = 'schema_version'"))
    engine.dispose()
    with pytest.raises(HistoryError) as raised:
        store.write(record(uid="later"))
    assert str(raised.value).startswith(f"{postgres_url}: schema version 99")
