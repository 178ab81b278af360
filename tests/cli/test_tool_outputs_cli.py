"""`benchfs report`, `compare` and `analyze phases` on directories of real IOR and
mdtest outputs that `benchfs run` did not make."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from analysis_support import REPO, fio_text, iostat_text, run_dir
from tool_outputs_support import TOOL_OUTPUTS, copy_outputs, output
from typer.testing import CliRunner

from benchfs.cli.main import app

__all__ = ["fio_text", "iostat_text", "run_dir"]  # fixtures used below

runner = CliRunner()


def _all_outputs(tmp_path: Path) -> Path:
    """Every real output of the data folder, the failed runs aside."""
    target = tmp_path / "outputs"
    shutil.copytree(TOOL_OUTPUTS, target)
    for failed in target.rglob("*failed*"):
        failed.unlink()
    return target


def test_report_on_a_directory_of_real_outputs(tmp_path: Path) -> None:
    outputs = _all_outputs(tmp_path)
    result = runner.invoke(app, ["report", str(outputs)])
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and "0 plots" in result.output
    markdown = (outputs / "report.md").read_text()
    for caption in (
        "**Data phases (IOR's summary names)**",
        "**Metadata phases (mdtest's names; rates over repetitions)**",
        "**Tool outputs read**",
        "**Files that are no tool's output (ignored)**",
    ):
        assert caption in markdown, caption
    assert "| write (local/ior_stonewall.txt) | ior | 1 | file-per-process | 510 |" in markdown
    assert (
        "| File creation (mdtest_n500_F_u.txt) | mdtest | 1 | unique-dir-per-rank | 2 | 1 | 1,000 |"
        in markdown
    )
    assert "| local/per op-File stat-00001.csv | mdtest per-op CSV |" in markdown
    assert "ior_fpp_t256k_b8m_i2.json.stdout" in markdown  # listed as ignored
    assert "tool outputs (not made by benchfs run)" in markdown
    assert (outputs / "report.html").stat().st_size > 5_000
    # a second report over the same directory skips the first one's files
    again = runner.invoke(app, ["report", str(outputs)])
    assert again.exit_code == 0, again.output
    assert "report.md" not in (outputs / "report.md").read_text().split("(ignored)**")[1]


def test_compare_an_ior_directory_with_a_benchfs_run(run_dir: Path, tmp_path: Path) -> None:
    ior = copy_outputs(tmp_path / "ior", "ior_fpp_t256k_b8m_i2.json")
    result = runner.invoke(app, ["compare", str(run_dir), str(ior), "--csv"])
    assert result.exit_code == 0, result.output
    rows = {tuple(line.split(",")[:2]): line.split(",")[2:] for line in result.stdout.splitlines()}
    # the built run's write bwMeanMIB is 1000 MiB/s; IOR's 1197.3643
    a_value, b_value, change = (float(value) for value in rows[("write", "bwMeanMIB")][:3])
    assert (a_value, b_value) == (1000.0, 1197.3643)
    assert change == pytest.approx(19.73643)
    assert ("read", "bwMaxMIB") in rows


def test_compare_two_mdtest_directories(tmp_path: Path) -> None:
    a = copy_outputs(tmp_path / "a", "mdtest_n500_F_u.txt")
    b = copy_outputs(tmp_path / "b", "local/mdtest_n200000_F_W1.txt")
    result = runner.invoke(app, ["compare", str(a), str(b), "--csv"])
    assert result.exit_code == 0, result.output
    rows = [line.split(",") for line in result.stdout.splitlines()]
    creation = [row for row in rows if row[0] == "File creation"]
    assert creation[0][:4] == ["File creation", "rate_max_ops_s", "9538.514", "3038.633"]
    assert not any(row[1] == "bwMeanMIB" for row in creation)  # no data figures on metadata


def test_analyze_phases_tables_csv_and_json(tmp_path: Path) -> None:
    outputs = copy_outputs(
        tmp_path / "o",
        "ior_fpp_t256k_b8m_i2.txt",
        "mdtest_n200_F_rankdetails.stdout",
        "mdtest_n200_F_rankdetails.csv",
    )
    result = runner.invoke(app, ["analyze", "phases", str(outputs), "--csv", "--ranks"])
    assert result.exit_code == 0, result.output
    titles = [part.splitlines()[0] for part in result.stdout.split("# ")[1:]]
    assert titles == [
        "Data phases (IOR's summary names)",
        "Metadata phases (mdtest's names; rates over repetitions)",
        "Tool outputs read",
        "per-rank rows",
    ]
    assert "\nwrite,ior,1,file-per-process,1259.34,1176.21," in result.stdout
    as_json = runner.invoke(
        app, ["analyze", "phases", str(output("mdtest_n500_F_u.txt")), "--json"]
    )
    assert as_json.exit_code == 0, as_json.output
    document = json.loads(as_json.stdout)
    assert [row["phase"] for row in document["phases"]][:2] == ["File creation", "File stat"]
    assert document["phases"][0]["rate_max_ops_s"] == 9538.514
    assert document["tool_outputs"][0]["format"] == "mdtest text"


def test_errors_are_one_line_naming_file_and_line(tmp_path: Path) -> None:
    text = output("mdtest_n300_dirs_and_files_i2.txt").read_text()
    (tmp_path / "cut.txt").write_text(text[: text.index("   File stat")])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for command in (["report", str(tmp_path)], ["analyze", "phases", str(tmp_path / "cut.txt")]):
        done = subprocess.run(
            [sys.executable, "-m", "benchfs", *command],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert "cut.txt: mdtest output ends inside its SUMMARY" in done.stderr
        assert "(at line 18)" in done.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["report", str(empty)])
    assert result.exit_code != 0
    assert "holds no IOR, mdtest or fio output" in str(result.exception)


def test_fio_output_beside_ior_output(tmp_path: Path, fio_text: str) -> None:
    outputs = copy_outputs(tmp_path / "o", "ior_fpp_t256k_b8m_i2.json")
    (outputs / "fio-randread.log").write_text(fio_text)
    result = runner.invoke(app, ["analyze", "phases", str(outputs), "--csv"])
    assert result.exit_code == 0, result.output
    rows = [line.split(",") for line in result.stdout.splitlines()]
    header = rows[1]
    fio_rows = [dict(zip(header, row, strict=True)) for row in rows if row[1:2] == ["fio"]]
    assert [(r["phase"], r["queue_depth"], r["access"]) for r in fio_rows] == [
        ("read (fio-randread.log)", "1", "file-per-process")  # IOR's read is there too
    ]
    assert float(fio_rows[0]["bwMeanMIB"]) > 0
    assert "fio-randread.log,fio JSON," in result.stdout


def test_fio_terse_output_is_analyzed_as_its_json(tmp_path: Path) -> None:
    """An old script's `fio --output-format=terse` log: the same phases as fio's JSON of the
    same run (both printed by one fio), in `analyze phases` at 80 columns."""
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed")
    done = subprocess.run(
        ["fio", f"--directory={tmp_path}", "--output-format=terse,json", "--name=old",
         "--rw=randrw", "--bs=4k", "--size=2M", "--unlink=1"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    start = done.stdout.index("{")
    terse_dir, json_dir = tmp_path / "terse", tmp_path / "json"
    terse_dir.mkdir(), json_dir.mkdir()
    (terse_dir / "old.log").write_text(done.stdout[:start])
    (json_dir / "old.json").write_text(done.stdout[start:])

    def phases(directory: Path) -> dict[str, dict[str, str]]:
        result = runner.invoke(app, ["analyze", "phases", str(directory), "--csv"])
        assert result.exit_code == 0, result.output
        rows = [line.split(",") for line in result.stdout.splitlines()]
        header = rows[1]
        found = [dict(zip(header, row, strict=True)) for row in rows[2:] if row[1:2] == ["fio"]]
        return {row["phase"]: row for row in found}

    terse, json_ = phases(terse_dir), phases(json_dir)
    assert sorted(terse) == sorted(json_) == ["read", "write"]
    for phase in ("read", "write"):
        assert terse[phase]["bwMeanMIB"] == json_[phase]["bwMeanMIB"]
        assert abs(float(terse[phase]["p90_us"]) - float(json_[phase]["p90_us"])) < 1  # whole us
        # terse names no option: no queue depth, where fio's JSON says iodepth=1
        assert "queue_depth" not in terse[phase] and json_[phase]["queue_depth"] == "1"
    table = runner.invoke(
        app, ["analyze", "phases", str(terse_dir / "old.log")], env={"COLUMNS": "80"}
    )
    assert table.exit_code == 0, table.output
    assert "not an output of IOR, mdtest or fio" not in table.output
    assert all(len(line) <= 80 for line in table.output.splitlines())
