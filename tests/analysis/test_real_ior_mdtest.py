"""IOR and mdtest run for real (2 ranks on a temporary directory), their outputs read back.

Runs where the tools are found: on PATH, in ``$IOR_BIN_DIR``, or in
``/opt/ior/bin`` (where docs/ANALYSIS.md suggests installing an IOR build).
The figures are whatever this machine gives; the tests check what the
loaders make of them, never their size.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analysis.loaders.ior_model import summary_from_results
from analysis.loaders.tools import load_tool_output
from analysis.sources.tool_dir import load_tool_dir
from benchfs.cli.main import app

SEARCH = os.pathsep.join(
    part for part in (os.environ.get("IOR_BIN_DIR"), "/opt/ior/bin", os.environ.get("PATH")) if part
)
IOR = shutil.which("ior", path=SEARCH)
MDTEST = shutil.which("mdtest", path=SEARCH)
MPIRUN = shutil.which("mpirun")
ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        IOR is None or MDTEST is None or MPIRUN is None,
        reason="ior, mdtest or mpirun not found (PATH, $IOR_BIN_DIR, /opt/ior/bin)",
    ),
]


FILES_PER_RANK = 2000
FILES = 2 * FILES_PER_RANK  # on two ranks


def _run(out: Path, name: str, tool: str | None, *args: str) -> Path:
    assert tool is not None and MPIRUN is not None
    command = [MPIRUN, "--oversubscribe", "-np", "2", tool, *args]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=300, env=ENV, cwd=out, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    path = out / name
    path.write_text(done.stdout + done.stderr)
    return path


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory of fresh IOR and mdtest outputs in several shapes."""
    out = tmp_path_factory.mktemp("outputs")
    scratch = tmp_path_factory.mktemp("scratch")
    ior = ["-a", "POSIX", "-w", "-r", "-F", "-t", "64k", "-b", "2m", "-i", "2", "-e"]
    _run(out, "ior.txt", IOR, *ior, "-o", str(scratch / "t"))
    _run(out, "ior-json.stdout", IOR, *ior, "-o", str(scratch / "j"), "-O", "summaryFormat=JSON")
    _run(out, "ior.csv", IOR, *ior, "-o", str(scratch / "c"), "-O", "summaryFormat=CSV")
    # mdtest prints a phase's time with three decimals: 2,000 files a rank keep
    # every phase well above a millisecond even at 300,000 creates a second.
    _run(out, "mdtest.txt", MDTEST, "-n", str(FILES_PER_RANK), "-F", "-i", "2", "-P",
         "--showRankStatistics",
         "--savePerOpDataCSV=fresh ops", "--saveRankPerformanceDetails=ranks.csv",
         "-d", str(scratch / "md"))  # fmt: skip
    return out


def test_ior_outputs_agree_with_themselves(outputs: Path) -> None:
    text = load_tool_output(outputs / "ior.txt").report
    as_json = load_tool_output(outputs / "ior-json.stdout").report
    as_csv = load_tool_output(outputs / "ior.csv").report
    for report in (text, as_json, as_csv):
        assert list(report.summary["operation"]) == ["write", "read"]
        assert len(report.results[report.results["access"] == "write"]) == 2
    # IOR's printed summary is what its printed rows give, IOR's way
    for report in (text, as_json):
        again = summary_from_results(report.results).set_index("operation")
        printed = report.summary.set_index("operation")
        for column in ("bwMaxMIB", "bwMinMIB", "bwMeanMIB", "MeanTime"):
            assert again.loc["write", column] == pytest.approx(
                printed.loc["write", column], rel=2e-3, abs=2e-4
            ), column
    assert text.version == as_json.version != ""


def test_mdtest_output_with_its_companion_files(outputs: Path) -> None:
    run = load_tool_dir(outputs)
    metadata = run.workload[run.workload["kind"] == "metadata"].set_index("phase")
    assert list(metadata.index) == ["File creation", "File stat", "File read", "File removal",
                                    "Tree creation", "Tree removal"]  # fmt: skip
    creation = metadata.loc["File creation"]
    assert creation["items"] == FILES and creation["repetitions"] == 2 and creation["tasks"] == 2
    assert creation["rate_min_ops_s"] <= creation["rate_mean_ops_s"] <= creation["rate_max_ops_s"]
    assert creation["time_max_s"] > 0 and creation["rank_rate_max_ops_s"] > 0
    # per-op files: the last repetition, FILES_PER_RANK files on each of 2 ranks
    assert creation["latency_ops"] == FILES and creation["p50_us"] <= creation["p99_us"]
    assert run.ranks is not None and set(run.ranks["repetition"]) == {0, 1}
    data = run.workload[run.workload["kind"] == "data"]
    assert sorted(set(data["source"])) == ["ior-json.stdout", "ior.csv", "ior.txt"]


def test_report_on_the_fresh_outputs(outputs: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(outputs)])
    assert result.exit_code == 0, result.output
    markdown = (outputs / "report.md").read_text()
    assert f"| File creation | mdtest | 1 | shared-dir | 2 | 2 | {FILES:,} |" in markdown
    assert "| fresh ops-File stat-00001.csv | mdtest per-op CSV |" in markdown
