"""Run directories and atomic writes."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from benchfs.errors import BenchfsError
from benchfs.results import create_run_dir, write_bytes_atomic, write_json_atomic

NOW = datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=UTC)


def test_name_is_utc_timestamp_and_label(tmp_path: Path) -> None:
    path = create_run_dir(tmp_path / "results", "ior-easy", now=NOW)
    assert path == tmp_path / "results" / "20260304T050607Z-ior-easy"
    assert path.is_dir()
    assert list(path.iterdir()) == []
    eastern = NOW.astimezone(timezone(timedelta(hours=-5)))
    assert create_run_dir(tmp_path, "x", now=eastern).name == "20260304T050607Z-x"


def test_same_second_runs_get_distinct_dirs(tmp_path: Path) -> None:
    made: list[Path] = []
    lock = threading.Lock()

    def claim() -> None:
        path = create_run_dir(tmp_path, "sweep", now=NOW)
        with lock:
            made.append(path)

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    names = sorted(path.name for path in made)
    expected = ["20260304T050607Z-sweep"] + [f"20260304T050607Z-sweep-{n}" for n in range(2, 9)]
    assert names == sorted(expected)


def test_bad_label(tmp_path: Path) -> None:
    with pytest.raises(BenchfsError, match=r"run label '\.\./x'"):
        create_run_dir(tmp_path, "../x")


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "summary.json"
    write_json_atomic(target, {"b": 1, "a": [1, 2]})
    assert target.read_text() == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}\n'
    write_bytes_atomic(target, b"new")
    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]
    assert target.stat().st_mode & 0o777 == 0o644


def test_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "manifest.json"
    target.write_text("old")
    with pytest.raises(TypeError, match="bytes-like object is required"):
        write_bytes_atomic(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]
