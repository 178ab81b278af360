"""`benchfs run`'s tables in an 80- and a 120-column terminal, for real: a
headline row per phase (bandwidth, time, p50/p99, stonewalled, verified),
a table of each phase's repetitions, every figure whole."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import environment, run_dirs, small_args, summary
from table_checks import assert_fits

from benchfs.cli.phase_display import scaled

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.mark.parametrize("width", [80, 120])
def test_the_run_tables_fit_and_lead_with_the_headline(tmp_path: Path, width: int) -> None:
    args = small_args(tmp_path, "--repetitions", "2", "--verify")
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "run", *args],
        capture_output=True, text=True, timeout=240,
        env={**environment(), "COLUMNS": str(width)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    document = summary(run_dir)
    write, read = document["phases"]
    figures = [
        scaled(phase[key], scale)
        for phase in (write, read)
        for key, scale in (("bwMeanMIB", 1), ("MeanTime", 1), ("p50_us", 1e-3), ("p99_us", 1e-3))
    ]
    figures += [scaled(rep["bwMiB"]) for rep in document["repetitions"]]
    headers = ["phase", "bw (MiB/s)", "time (s)", "p50 (ms)", "p99 (ms)", "stonewalled",
               "verified", "rep"]  # fmt: skip
    *tables, last = done.stdout.rstrip().splitlines()
    assert last == f"results: {run_dir}"  # whole, for the terminal to wrap
    assert_fits("\n".join(tables), width, figures, headers)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Data phases on BenchFS native client: 4 ranks, queue depth 1")
    headline = {
        line.split()[0]: line.split() for line in lines if line.startswith(("write ", "read "))
    }
    assert headline["write"][1] == scaled(write["bwMeanMIB"])
    assert headline["read"][-2:] == ["no", "yes"]  # not stonewalled, verified
    assert headline["write"][-1] == "-"  # a write is not what is verified
    assert "write: 2 repetitions" in done.stdout and "read: 2 repetitions" in done.stdout
    assert "more column(s) with --wide: data (MiB), first done (s)" in done.stdout
