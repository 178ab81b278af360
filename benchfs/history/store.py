"""The results database: the one module that talks to it (SQLAlchemy Core).

SQLite by default, one file under the results root (``history.sqlite``),
nothing to start; or PostgreSQL (``history.url = "postgresql://user@host/db"``,
through psycopg) for a site that keeps one history for many users and
clusters. The schema is ``benchfs.history.schema`` in both.

Every write is one transaction: a run's rows are all there or none are.
Writers take the database's write lock at once (SQLite ``BEGIN
IMMEDIATE``, a PostgreSQL advisory lock), so two runs finishing together
write one after the other, each waiting up to ``lock_timeout_s``. A run
written again (``benchfs history import``) replaces its rows: the same
rows, however often.

Whatever goes wrong (a damaged, truncated, locked or read-only file, a
database of a newer schema, a server that does not answer) is one
``HistoryError`` naming the file or URL; the results directory stays the
source of truth.
"""

from __future__ import annotations

import json
import math
import sqlite3
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from sqlalchemy import (
    Connection,
    Engine,
    RowMapping,
    create_engine,
    delete,
    event,
    insert,
    inspect,
    select,
)
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from benchfs.errors import HistoryError
from benchfs.history import schema
from benchfs.history.model import FigureRow, NodeRow, NodeRun, RunRecord, RunRow

SQLITE_NAME = "history.sqlite"
SQLITE_MAGIC = b"SQLite format 3\x00"
# Any fixed number: the advisory lock PostgreSQL writers take first.
PG_LOCK_KEY = 0x62666873  # "bfhs"
PG_CONNECT_TIMEOUT_S = 10
REBUILD = "move it aside and `benchfs history import` rebuilds it"


class Location:
    """Where the history is: a SQLite file or a PostgreSQL URL, and how errors name it."""

    def __init__(self, *, path: Path | None = None, url: str | None = None) -> None:
        if (path is None) == (url is None):
            raise ValueError("a history location is a file or a URL")
        self.path = path
        self.url = url

    @classmethod
    def of(cls, results_dir: str | Path, url: str | None) -> Location:
        """``url`` (a file path, ``sqlite:///PATH`` or ``postgresql://...``), else
        ``<results_dir>/history.sqlite``."""
        if url is None:
            return cls(path=Path(results_dir) / SQLITE_NAME)
        if "://" not in url:
            return cls(path=Path(url))
        scheme = urlsplit(url).scheme.lower()
        if scheme == "sqlite":
            return cls(path=Path(url.split("://", 1)[1].removeprefix("/")).absolute())
        if scheme.split("+")[0] in ("postgresql", "postgres"):
            return cls(url=url)
        raise HistoryError(
            f"history.url {url}: unknown database {scheme!r} (a file path, sqlite:///PATH "
            "or postgresql://USER@HOST/DB)"
        )

    @property
    def shown(self) -> str:
        """The file, or the URL (it never holds a password: the config refuses one)."""
        return str(self.path) if self.path is not None else str(self.url)

    @property
    def is_sqlite(self) -> bool:
        return self.path is not None

    def engine_url(self, *, read_only: bool) -> str:
        if self.path is not None:
            mode = "ro" if read_only else "rwc"
            return (
                f"sqlite+pysqlite:///file:{quote(str(self.path.absolute()))}?mode={mode}&uri=true"
            )
        assert self.url is not None
        scheme, rest = self.url.split("://", 1)
        return f"postgresql+psycopg://{rest}" if "+" not in scheme else self.url


class History:
    """Read and write one history; every call opens and closes its own connection."""

    def __init__(self, location: Location, *, lock_timeout_s: float = 30.0) -> None:
        self.location = location
        self.lock_timeout_s = lock_timeout_s
        self._engines: dict[bool, Engine] = {}

    @property
    def shown(self) -> str:
        return self.location.shown

    def exists(self) -> bool:
        """False for a SQLite file not yet made (reads then find nothing)."""
        return self.location.path is None or self.location.path.exists()

    # -- writing

    def write(self, record: RunRecord) -> None:
        """Replace the run's rows (by its uid) with ``record``'s, in one transaction."""
        with self._errors():
            if self.location.path is not None:  # the results root, as a run makes it
                self.location.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self._errors(), self._transaction(write=True) as conn:
            version = _schema_version(conn, self.shown)
            if version is None:
                schema.metadata.create_all(conn)
                conn.execute(
                    insert(schema.meta).values(
                        key="schema_version", value=str(schema.SCHEMA_VERSION)
                    )
                )
            else:
                _check_version(version, self.shown)
            _replace_run(conn, record)

    # -- reading

    def node_runs(
        self, *, cluster: str | None = None, since: str | None = None, node: str | None = None
    ) -> list[NodeRun]:
        """Every node's row of every run (oldest first), joined with its run."""
        if not self.exists():
            return []
        runs, nodes = schema.runs, schema.run_nodes
        query = select(runs, nodes).join(nodes, nodes.c.run_id == runs.c.id)
        if cluster is not None:
            query = query.where(runs.c.cluster == cluster)
        if since is not None:
            query = query.where(runs.c.started_at >= since)
        if node is not None:
            query = query.where(nodes.c.node == node)
        query = query.order_by(runs.c.started_at, runs.c.id, nodes.c.node)
        with self._errors(), self._transaction(write=False) as conn:
            if not _readable(conn, self.shown):
                return []
            rows = conn.execute(query).mappings().all()
        return [_node_run(row) for row in rows]

    def runs(self, *, cluster: str | None = None, since: str | None = None) -> list[RunRow]:
        """Every run (oldest first)."""
        return [run for _, run in self.runs_with_ids(cluster=cluster, since=since)]

    def runs_with_ids(
        self, *, cluster: str | None = None, since: str | None = None
    ) -> list[tuple[int, RunRow]]:
        if not self.exists():
            return []
        runs = schema.runs
        query = select(runs).order_by(runs.c.started_at, runs.c.id)
        if cluster is not None:
            query = query.where(runs.c.cluster == cluster)
        if since is not None:
            query = query.where(runs.c.started_at >= since)
        with self._errors(), self._transaction(write=False) as conn:
            if not _readable(conn, self.shown):
                return []
            rows = conn.execute(query).mappings().all()
        return [(int(row["id"]), _run_row(row)) for row in rows]

    def figures(self, run_ids: Sequence[int]) -> dict[int, list[FigureRow]]:
        """The per-repetition figures of these runs, by run id."""
        found: dict[int, list[FigureRow]] = {run_id: [] for run_id in run_ids}
        if not run_ids or not self.exists():
            return found
        table = schema.figures
        query = (
            select(table)
            .where(table.c.run_id.in_(list(run_ids)))
            .order_by(table.c.run_id, table.c.phase, table.c.metric, table.c.repetition)
        )
        with self._errors(), self._transaction(write=False) as conn:
            if not _readable(conn, self.shown):
                return found
            for row in conn.execute(query).mappings():
                found[int(row["run_id"])].append(
                    FigureRow(row["phase"], row["metric"], int(row["repetition"]), row["value"])
                )
        return found

    # -- connections

    def _engine(self, *, write: bool) -> Engine:
        if self.location.path is not None:
            _check_sqlite_file(self.location.path)  # before every use: it may change
        if write not in self._engines:
            self._engines[write] = self._new_engine(write=write)
        return self._engines[write]

    def _new_engine(self, *, write: bool) -> Engine:
        location = self.location
        url = location.engine_url(read_only=not write)
        if not location.is_sqlite:
            return create_engine(
                url, poolclass=NullPool, connect_args={"connect_timeout": PG_CONNECT_TIMEOUT_S}
            )
        engine = create_engine(
            url, poolclass=NullPool, connect_args={"timeout": self.lock_timeout_s}
        )

        # The driver's own transaction handling off, so that BEGIN is ours: a writer
        # takes the write lock at once instead of failing to upgrade a read lock.
        @event.listens_for(engine, "connect")
        def _connect(dbapi_connection: sqlite3.Connection, _record: object) -> None:
            dbapi_connection.isolation_level = None

        @event.listens_for(engine, "begin")
        def _begin(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

        return engine

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Connection]:
        # No pool: each transaction opens its connection and closes it after.
        with self._engine(write=write).begin() as conn:
            if write and not self.location.is_sqlite:
                milliseconds = max(1, int(self.lock_timeout_s * 1000))
                conn.exec_driver_sql(f"SET LOCAL lock_timeout = {milliseconds}")
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({PG_LOCK_KEY})")
            yield conn

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Any database or file error as one line naming the history."""
        try:
            yield
        except HistoryError:
            raise
        except DBAPIError as error:
            raise HistoryError(f"{self.shown}: {self._reason(error)}") from error
        except (SQLAlchemyError, OSError, sqlite3.Error) as error:
            message = getattr(error, "strerror", None) or str(error)
            raise HistoryError(f"{self.shown}: {_first_line(message)}") from error

    def _reason(self, error: DBAPIError) -> str:
        reason = _first_line(str(error.orig))
        if "database is locked" in reason:
            return f"{reason} (another writer held it for more than {self.lock_timeout_s:g} s)"
        if "readonly database" in reason or "unable to open database file" in reason:
            return f"{reason} (is the file or its directory read-only?)"
        if "malformed" in reason or "not a database" in reason:
            return f"{reason}: damaged; {REBUILD}"
        if "lock timeout" in reason:
            return (
                f"{reason} (another writer held the lock for more than {self.lock_timeout_s:g} s)"
            )
        return reason


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _check_sqlite_file(path: Path) -> None:
    """A file that is there must be a whole SQLite database: the magic, and as many
    pages as its header says (a truncated copy otherwise reads as a smaller history)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return  # an empty file is an empty database to SQLite
    with path.open("rb") as handle:
        header = handle.read(100)
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        what = "truncated" if SQLITE_MAGIC.startswith(header[:16]) else "not a SQLite database"
        raise HistoryError(
            f"{path}: {what}: move it aside and `benchfs history import` rebuilds it"
        )
    page_size, change_counter, page_count, valid_for = (
        struct.unpack(">H", header[16:18])[0],
        *struct.unpack(">II", header[24:32]),
        struct.unpack(">I", header[92:96])[0],
    )
    page_size = 65536 if page_size == 1 else page_size
    # The header's page count holds only while the change counter matches (SQLite's rule).
    if change_counter == valid_for and page_count and size < page_count * page_size:
        raise HistoryError(
            f"{path}: truncated ({size} bytes of {page_count * page_size}): {REBUILD}"
        )


def _schema_version(conn: Connection, shown: str) -> int | None:
    """The database's schema version; None for an empty database (ours to create)."""
    tables = set(inspect(conn).get_table_names())
    if "meta" not in tables:
        if tables & {table.name for table in schema.metadata.sorted_tables}:
            raise HistoryError(f"{shown}: not a BenchFS history (tables but no meta table)")
        if tables:
            others = ", ".join(sorted(tables))
            raise HistoryError(f"{shown}: not a BenchFS history (it holds other tables: {others})")
        return None
    value = conn.execute(
        select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")
    ).scalar()
    try:
        return int(value) if value is not None else None
    except ValueError:
        raise HistoryError(f"{shown}: schema_version {value!r} is not a number") from None


def _check_version(version: int, shown: str) -> None:
    if version > schema.SCHEMA_VERSION:
        raise HistoryError(
            f"{shown}: schema version {version}, written by a newer benchfs (this one reads "
            f"{schema.SCHEMA_VERSION}); upgrade benchfs to use it"
        )
    if version < schema.SCHEMA_VERSION:  # no older schema exists yet
        raise HistoryError(f"{shown}: schema version {version} is unknown")


def _readable(conn: Connection, shown: str) -> bool:
    """Whether there is a history to read (an empty database has none)."""
    version = _schema_version(conn, shown)
    if version is None:
        return False
    _check_version(version, shown)
    return True


def _replace_run(conn: Connection, record: RunRecord) -> None:
    runs = schema.runs
    old = conn.execute(select(runs.c.id).where(runs.c.uid == record.run.uid)).scalar()
    if old is not None:
        for table in (schema.run_nodes, schema.verdicts, schema.figures):
            conn.execute(delete(table).where(table.c.run_id == old))
        conn.execute(delete(runs).where(runs.c.id == old))
    values = asdict(record.run)
    values["details"] = _json(values["details"])
    values["recorded_at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    inserted = conn.execute(insert(runs).values(**values)).inserted_primary_key
    assert inserted is not None
    run_id = inserted[0]
    if record.nodes:
        conn.execute(
            insert(schema.run_nodes),
            [
                {**_clean(asdict(node)), "run_id": run_id, "figures": _json(node.figures)}
                for node in record.nodes
            ],
        )
    if record.verdicts:
        conn.execute(
            insert(schema.verdicts),
            [
                {**_clean(asdict(verdict)), "run_id": run_id, "evidence": _json(verdict.evidence)}
                for verdict in record.verdicts
            ],
        )
    finite = [figure for figure in record.figures if math.isfinite(figure.value)]
    if finite:
        conn.execute(
            insert(schema.figures), [{**asdict(figure), "run_id": run_id} for figure in finite]
        )


def _clean(values: dict[str, Any]) -> dict[str, Any]:
    """NaN as NULL: neither database keeps a NaN the same way."""
    return {
        key: None if isinstance(value, float) and not math.isfinite(value) else value
        for key, value in values.items()
    }


def _json(value: Any) -> str:
    return json.dumps(_finite(value), sort_keys=True, default=str, allow_nan=False)


def _finite(value: Any) -> Any:
    """JSON-ready: NaN and infinities as null, numpy scalars as Python numbers."""
    if isinstance(value, dict):
        return {str(key): _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


_RUN_FIELDS = [field.name for field in fields(RunRow)]
_NODE_FIELDS = [field.name for field in fields(NodeRow)]


def _run_row(row: RowMapping) -> RunRow:
    values = {name: row[name] for name in _RUN_FIELDS}
    values["details"] = json.loads(row["details"] or "{}")
    return RunRow(**values)


def _node_run(row: RowMapping) -> NodeRun:
    values = {name: row[name] for name in _NODE_FIELDS}
    values["figures"] = json.loads(row["figures"] or "{}")
    values["flagged"] = bool(values["flagged"])
    return NodeRun(
        run_id=int(row["run_id"]),
        uid=row["uid"],
        cluster=row["cluster"],
        label=row["label"],
        kind=row["kind"],
        started_at=row["started_at"],
        status=row["status"],
        results_dir=row["results_dir"],
        row=NodeRow(**values),
    )
