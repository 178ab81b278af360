"""`benchfs diagnose` through typer's CliRunner and as a real subprocess."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from table_checks import assert_fits
from typer.testing import CliRunner

from benchfs.cli.main import app
from benchfs.health.plan import diagnose_plan
from benchfs.health.report import TERMINAL_HEADERS

runner = CliRunner()
needs_tools = pytest.mark.skipif(
    shutil.which("fio") is None or shutil.which("iostat") is None, reason="needs fio and iostat"
)


def _benchfs(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchfs", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_quick_plan_fits_its_budget() -> None:
    # Slurm kills a HealthCheckProgram at 60 s; --quick promises 30 s per node. The timed fio
    # steps take at most half of that, leaving the rest for the size-bound and metadata steps.
    # The wall time itself depends on the machine: benchmarks/diagnose_budget.py measures it.
    plan = diagnose_plan(quick=True)
    timed = [step.job.runtime_s for step in plan.steps if step.job and step.job.runtime_s]
    assert len(timed) == 6 and sum(timed) <= 15


@needs_tools
@pytest.mark.slow
def test_quick_run_prints_a_table_and_writes_reports(tmp_path: Path) -> None:
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    result = runner.invoke(app, ["diagnose", "--dir", str(work), "--quick", "--output", str(out)])
    document = json.loads((out / "diagnose.json").read_text())
    assert result.exit_code == document["exit_code"] in (0, 1), result.output
    assert document["status"] in ("healthy", "degraded")
    for name in ("seq_write_direct", "seq_read_direct", "rand_rw", "fsync_write", "metadata"):
        assert name in result.output
    assert "p99.9" in result.output and "max" in result.output
    markdown = (out / "diagnose.md").read_text()
    assert markdown.startswith("# Storage health report\n")
    assert "| test | read MiB/s | write MiB/s |" in markdown
    (node,) = document["nodes"]
    tests = {test["name"]: test for test in node["measurement"]["tests"]}
    assert tests["seq_read_direct"]["metrics"]["read_bw_MiB_s"] > 0
    assert tests["metadata"]["metrics"]["create_ops_s"] > 0
    assert tests["rand_rw"]["iostat"].get("samples", 0) >= 1
    assert (out / "raw" / "rand_rw.fio.json").exists()
    assert (out / "raw" / "rand_rw.iostat.json").exists()
    assert list(work.iterdir()) == []


FIGURE = re.compile(r"^(-|[\d.,]+)(/(-|[\d.,]+))?$")
VERDICTS = ("ok", "warn", "DEGRADED", "ERROR")


@needs_tools
@pytest.mark.slow
@pytest.mark.parametrize("width", [80, 120])
def test_in_80_and_120_columns_every_figure_stays_whole(tmp_path: Path, width: int) -> None:
    done = _benchfs(
        "diagnose", "--dir", str(tmp_path), "--quick", env={**os.environ, "COLUMNS": str(width)}
    )
    assert done.returncode in (0, 1), done.stderr
    lines = done.stdout.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.strip().startswith("───"))
    end = next((i for i in range(rule, len(lines)) if not lines[i].strip()), len(lines))
    body = lines[rule + 1 : end]
    rows = [line.split() for line in body if line.split() and line.split()[-1] in VERDICTS]
    assert len(rows) == 7, done.stdout
    assert_fits("\n".join(lines[:end]), width, headers=TERMINAL_HEADERS)
    for line in body:
        words = line.split()
        if words and words[-1] in VERDICTS:
            # test name, 7 figures, verdict: each figure whole on its row
            figures = words[-8:-1]
            assert all(FIGURE.match(figure) for figure in figures), line
        else:
            # a continuation holds only the rest of a test's name
            assert len(words) <= 1 and not FIGURE.match(words[0] if words else "x"), line


def test_missing_directory_exits_2_with_the_reason_in_json(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    result = runner.invoke(app, ["diagnose", "--dir", str(missing), "--quick", "--json"])
    assert result.exit_code == 2
    document = json.loads(result.stdout)
    assert document["status"] == "error"
    (node,) = document["nodes"]
    assert node["measurement"]["error"] == (
        f"directory {missing} does not exist or is not a directory"
    )


def test_missing_directory_in_the_terminal_says_so(tmp_path: Path) -> None:
    result = runner.invoke(app, ["diagnose", "--dir", str(tmp_path / "nope"), "--quick"])
    assert result.exit_code == 2
    assert "ERROR" in result.output and "could not run" in result.output


def test_fio_absent_exits_2_naming_fio(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}  # a PATH without fio
    done = _benchfs("diagnose", "--dir", str(tmp_path), "--quick", "--json", env=env)
    assert done.returncode == 2, done.stderr
    document = json.loads(done.stdout)
    assert document["nodes"][0]["measurement"]["error"] == (
        "fio not found on PATH (install the fio package)"
    )


def test_unknown_threshold_key_is_one_line_naming_file_and_key(tmp_path: Path) -> None:
    thresholds = tmp_path / "limits.toml"
    thresholds.write_text("[thresholds]\nseq_read_min_MiB_s = 50\nread_speed = 3\n")
    done = _benchfs("diagnose", "--dir", str(tmp_path), "--thresholds", str(thresholds))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert str(thresholds) in lines[0] and "unknown threshold key 'read_speed'" in lines[0]


def test_bad_hostfile_is_one_line(tmp_path: Path) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node1 slots=two\n")
    done = _benchfs("diagnose", "--nodes", str(hostfile), "--dir", str(tmp_path))
    assert done.returncode == 2
    assert f"{hostfile}:1" in done.stderr and "Traceback" not in done.stderr


def test_help_documents_the_options() -> None:
    result = runner.invoke(app, ["diagnose", "--help"])
    assert result.exit_code == 0
    for option in ("--nodes", "--dir", "--quick", "--json", "--output", "--thresholds"):
        assert option in result.output
    assert "--node-name" not in result.output  # worker options stay hidden
