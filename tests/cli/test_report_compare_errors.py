"""`benchfs report` and `benchfs compare` on bad input, through the real entry point: exit code
2 and one line naming the directory or the file (and where in it), no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from analysis_support import REPO

from analysis.synthetic import write_run_dir


def _benchfs(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "benchfs", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def _one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    return done.stderr.strip()


def _run_dir(root: Path) -> Path:
    write_run_dir(root, manifest={"label": "run", "sweep": None, "effective_config": {}})
    summary = {"phases": [{"phase": "write", "bwMeanMIB": 100.0}], "repetitions": []}
    (root / "workload" / "summary.json").write_text(json.dumps(summary))
    return root


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    good = _run_dir(tmp_path / "good")
    assert (
        _one_line_error(_benchfs("report", str(missing))) == f"error: {missing}: no such directory"
    )
    for pair in ((good, missing), (missing, good)):
        done = _benchfs("compare", *map(str, pair))
        assert _one_line_error(done) == f"error: {missing}: no such directory"


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("manifest.json", '{"label": ', "manifest.json: Expecting value (at line 1 column 11)"),
        ("workload/summary.json", '{"phases": [', "workload/summary.json: no IOR JSON document"),
    ],
)
def test_a_corrupt_file_is_named_with_its_place(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    good, bad = _run_dir(tmp_path / "good"), _run_dir(tmp_path / "bad")
    (bad / name).write_text(text)
    for args in (("report", str(bad)), ("compare", str(good), str(bad))):
        message = _one_line_error(_benchfs(*args))
        assert message.startswith(f"error: {bad / name}: "), message
        assert expected in message
