"""`benchfs report` and `benchfs analyze` on damaged results: one line naming
the file and where in it, exit 2, never a traceback and never "not in this run"."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from analysis.synthetic import KIND_ID, empty_records, trace_header, write_run_dir, write_trace

START = 1_763_800_000_000_000_000
TRACE = "traces/trace-n0-1.bftrace"


def benchfs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchfs", *args], capture_output=True, text=True, timeout=120
    )


def trace(root: Path, *, kind: int = KIND_ID["storage_op"], start: int = START, t_ns: int = 0):
    records = empty_records(3)
    records["kind"] = kind
    records["t_ns"] = t_ns
    write_trace(root / TRACE, trace_header("n0", 0, 1, start), records)


def unknown_kind(root: Path) -> None:
    trace(root, kind=200)


def huge_start(root: Path) -> None:
    trace(root, start=10**30)


def huge_time(root: Path) -> None:
    trace(root, t_ns=2**63)


def bad_ranks(root: Path) -> None:
    (root / "workload" / "ranks.jsonl").write_text('{"rank": 0}\n{not json\n')


def bad_iostat(root: Path) -> None:
    (root / "iostat").mkdir()
    (root / "iostat" / "node0.json").write_text('{"sysstat": {"hosts": [')


def junk_iostat(root: Path) -> None:
    (root / "iostat").mkdir()
    (root / "iostat" / "node0.json").write_text("garbage {")


def bad_preflight(root: Path) -> None:
    (root / "preflight").mkdir()
    (root / "preflight" / "node0.json").write_text('{"benchfs-diagnose": ')


def newer_version(root: Path) -> None:
    (root / "manifest.json").write_text('{"data_version": 2, "label": "x"}')


def unknown_version(root: Path) -> None:
    (root / "manifest.json").write_text('{"data_version": "one", "label": "x"}')


CASES: list[tuple[Callable[[Path], None], str, str]] = [
    (unknown_kind, TRACE, "record 0 has kind 200, which the header does not define (at byte "),
    (huge_start, TRACE, "start_unix_ns 1000000000000000000000000000000 is not a time"),
    (huge_time, TRACE, "record 0 has a time beyond 4611686018427387904 ns after the start"),
    (bad_ranks, "workload/ranks.jsonl", "(at line 2)"),
    (bad_iostat, "iostat/node0.json", "(at "),
    (junk_iostat, "iostat/node0.json", "not valid JSON: Expecting value (at line 1 column 1)"),
    (bad_preflight, "preflight/node0.json", "not valid JSON"),
    (newer_version, "manifest.json", "data_version 2: written by a newer benchfs"),
    (unknown_version, "manifest.json", "data_version 'one' is unknown"),
]


@pytest.mark.parametrize(("damage", "file", "says"), CASES, ids=[c[0].__name__ for c in CASES])
def test_report_on_a_damaged_file_is_one_line_naming_it(
    tmp_path: Path, damage: Callable[[Path], None], file: str, says: str
) -> None:
    root = write_run_dir(tmp_path / "run")
    damage(root)
    done = benchfs("report", str(root))
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: {root / file}: "), line
    assert says in line, line
    assert not (root / "report.md").exists()


@pytest.mark.parametrize("damage", [unknown_kind, huge_start, huge_time])
def test_analyze_on_a_damaged_trace_is_one_line_naming_it(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    root = write_run_dir(tmp_path / "run")
    damage(root)
    done = benchfs("analyze", "latency", str(root / "traces"))
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: {root / TRACE}: "), line


def test_a_newer_results_directory_is_refused_by_compare(tmp_path: Path) -> None:
    a = write_run_dir(tmp_path / "a")
    b = write_run_dir(tmp_path / "b", manifest={"data_version": 7})
    done = benchfs("compare", str(a), str(b))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"error: {b / 'manifest.json'}: data_version 7: written by a newer benchfs "
        "(this one reads 1); upgrade to read it (at data_version)"
    ]
