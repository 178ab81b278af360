"""Every `benchfs bench` table for real (tiny sizes) in an 80- and a 120-column
terminal: no line wider, nothing cut, every header word whole, and each row's
figures whole on their row."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import environment, needs_mdtest, needs_mount
from table_checks import assert_fits

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
WIDTHS = (80, 120)
EXAMPLES = Path(__file__).resolve().parents[2] / "benchfs_native/target/release/examples"
# A figure, a range, a ratio with its unit, or a target's verdict.
FIGURE = re.compile(r"^[-+]?[\d.,]+(x|%)?$|^[\d.]+-[\d.]+$|^[-+]\d+\.\.[-+]\d+$")
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")


def _bench(width: int, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "bench", *args],
        capture_output=True, text=True, timeout=800,
        env={**environment(), "COLUMNS": str(width)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _rows(output: str, first: str) -> list[list[str]]:
    """The table rows whose first word is ``first``."""
    return [line.split() for line in output.splitlines() if line.split()[:1] == [first]]


@needs_fio
@pytest.mark.parametrize("width", WIDTHS)
def test_storage(tmp_path: Path, width: int) -> None:
    out = _bench(width, "storage", "--dir", str(tmp_path), "--seq-size", "8m",
                 "--rand-size", "1m", "--trace-repeats", "0", "--rounds", "2")  # fmt: skip
    headers = ["case", "tool", "MiB/s", "IOPS", "p50 (ms)", "p99 (ms)", "ratio", "io_depth"]
    assert_fits(out, width, headers=headers)
    engine = [row for row in out.splitlines() if row.split()[1:2] == ["engine"]]
    assert len(engine) == 4
    for row in engine:
        assert all(FIGURE.match(cell) for cell in row.split()[-6:]), row
    fio = _rows(out, "fio")
    assert len(fio) == 4 and all(all(FIGURE.match(c) for c in row[1:]) for row in fio)


@pytest.mark.parametrize("width", WIDTHS)
def test_scale(tmp_path: Path, width: int) -> None:
    out = _bench(width, "scale", "--nodes", "1", "--nodes", "2", "--dir", str(tmp_path))
    assert_fits(out, width, headers=["step (s)", "N=1", "N=2", "growth k", "(est.)"])
    for step in ("spawn", "membership", "connect", "first_rpc", "stop"):
        (row,) = _rows(out, step)
        assert all(FIGURE.match(cell) for cell in row[1:] if cell != "!"), row


@needs_fio
@pytest.mark.parametrize("width", WIDTHS)
def test_cluster(tmp_path: Path, width: int) -> None:
    (tmp_path / "disk").mkdir()
    out = _bench(width, "cluster", "--dir", str(tmp_path / "disk"), "--results-dir",
                 str(tmp_path / "results"), "--transfer-size", "64k", "--block-size", "4m",
                 "--nodes", "2", "--rounds", "2", "--queue-depth", "1")  # fmt: skip
    headers = ["side (median)", "write (MiB/s)", "read (MiB/s)", "read/write", "median", "IQR",
               "min-max", "target >= 0.90"]  # fmt: skip
    assert_fits(out, width, headers=headers)
    ratios = [line.split() for line in out.splitlines() if line.startswith("run / ")]
    assert [row[3] for row in ratios] == ["write", "read", "write", "read"]
    for row in ratios:
        assert all(FIGURE.match(cell) for cell in row[4:7]) and row[7] in ("met", "MISSED")


@pytest.mark.parametrize("width", WIDTHS)
def test_metadata(tmp_path: Path, width: int) -> None:
    (tmp_path / "disk").mkdir()
    out = _bench(width, "metadata", "--dir", str(tmp_path / "disk"), "--items", "30",
                 "--no-mount", "--results-dir", str(tmp_path / "results"))  # fmt: skip
    headers = ["phase", "native (ops/s)", "POSIX (ops/s)", "native / POSIX"]
    assert_fits(out.split("results (")[0], width, headers=headers)
    rows = [line.split() for line in out.splitlines() if line.startswith(("Directory", "File"))]
    assert len(rows) == 7
    assert all(all(FIGURE.match(cell) for cell in row[2:]) for row in rows), rows
    assert "mdtest on the mount left out: it runs through the mount" in out


@needs_mount
@needs_mdtest
def test_metadata_with_mount_and_mdtest(tmp_path: Path) -> None:
    (tmp_path / "disk").mkdir()
    out = _bench(80, "metadata", "--dir", str(tmp_path / "disk"), "--items", "20", "--nodes",
                 "1", "--mdtest", "--results-dir", str(tmp_path / "results"))  # fmt: skip
    headers = ["phase", "native (ops/s)", "mount (ops/s)", "mdtest (ops/s)", "POSIX (ops/s)",
               "native / POSIX", "mount / POSIX", "mount / mdtest"]  # fmt: skip
    table = out.split("results (")[0]
    assert_fits(table, 80, headers=headers)
    rows = [line.split() for line in table.splitlines() if line.startswith(("Directory", "File"))]
    # One table: every phase's row holds its seven figures.
    assert len(rows) == 7 and all(len(row) == 9 for row in rows), table
    assert all(all(FIGURE.match(cell) for cell in row[2:]) for row in rows), rows
    assert "mdtest -n 20 -u -C -T -E -r" in table


@needs_mount
@pytest.mark.parametrize("width", WIDTHS)
def test_mount(tmp_path: Path, width: int) -> None:
    out = _bench(width, "mount", "--dir", str(tmp_path), "--rounds", "1", "--seq-size", "4MiB",
                 "--small-ops", "100")  # fmt: skip
    table = out.split("\n\n")[0]
    headers = ["case", "against", "mount", "ref.", "paired", "range", "target"]
    assert_fits(table, width, headers=headers)
    # case (unit), reference, the mount's and the reference's medians, the paired figure
    rows = re.findall(r"^\d (?:MiB|KiB) .*?\((?:MiB/s|us)\) +(native|local disk) +([\d,]+) +"
                      r"([\d,]+) +([-+\d.,]+(?:x| us))", table, re.M)  # fmt: skip
    assert [row[0] for row in rows] == ["native"] * 4 + ["local disk"] * 4, table


@pytest.mark.skipif(
    not (EXAMPLES / "am_pingpong").is_file() or (os.cpu_count() or 1) < 2,
    reason=f"the UCX examples built in {EXAMPLES} (make examples) and CPUs 0 and 1",
)
@pytest.mark.skipif(shutil.which("ucx_perftest") is None, reason="ucx_perftest (ucx-utils)")
@pytest.mark.parametrize("width", WIDTHS)
def test_rpc(width: int) -> None:
    out = _bench(width, "rpc", "--transport", "tcp", "--examples-dir", str(EXAMPLES),
                 "--rounds", "1", "--lat-iterations", "200", "--bw-iterations", "10")  # fmt: skip
    table = out.split("\n\n")[0]
    headers = ["case", "reference", "engine", "ref.", "ratio [q1-q3]", "min-max", "target"]
    assert_fits(table, width, headers=headers)
    verdicts = re.findall(r"(?:>=|<=) [\d.]+ (?:met|MISSED|no steady round)", table)
    assert len(verdicts) >= 2, table
