"""`benchfs run --suite io500-quick` end to end: on BenchFS (the embedded
local cluster, 4 daemons, 4 ranks) and on a posix: target (a temporary
directory). Every IO500 phase is there in IO500's order, the score is
recomputed here from the phases, find found exactly the files it should,
and `benchfs compare` compares the two suites."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from run_helpers import (
    IOR_SEARCH,
    benchfs_run,
    environment,
    manifest,
    run_dirs,
    small_args,
    summary,
)

from analysis.loaders.traces import load_traces

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

RANKS = 4
PHASES = [
    "ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write", "find",
    "ior-easy-read", "mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat",
    "mdtest-easy-delete", "mdtest-hard-read", "mdtest-hard-delete",
]  # fmt: skip
HARD_FILES = 120  # per rank: of files 0-119 only file.mdtest.<r>.101 matches *01*
BANDWIDTH = [phase for phase in PHASES if phase.startswith("ior-")]


def quick_args(tmp_path: Path, label: str, *extra: str) -> list[str]:
    """io500-quick as it ships: its sizes and its 1 s stonewall."""
    return small_args(tmp_path, "--suite", "io500-quick", "--label", label, *extra)


def suite_args(tmp_path: Path, label: str, stonewall_s: float, *extra: str) -> list[str]:
    # Smaller ceilings: the suite's shape, quickly.
    return quick_args(
        tmp_path, label,
        "--set", f"suite.stonewall_s={stonewall_s}",
        "--set", "suite.ior_easy_transfer_size=256k",
        "--set", "suite.ior_easy_block_size=16m",
        "--set", "suite.ior_hard_segments=200",
        "--set", "suite.mdtest_easy_files=300",
        "--set", f"suite.mdtest_hard_files={HARD_FILES}",
        *extra,
    )  # fmt: skip


def expected_found(files_per_rank: int) -> int:
    """mdtest-hard's files whose name matches *01* (pfind -name)."""
    return sum(
        "01" in f"file.mdtest.{rank}.{item}"
        for rank in range(RANKS)
        for item in range(files_per_rank)
    )


def check_suite(run_dir: Path, target: str, stonewall_s: float) -> dict[str, Any]:
    document = summary(run_dir)
    rows = {row["phase"]: row for row in document["phases"]}
    assert [row["phase"] for row in document["phases"]] == PHASES
    figures = {}
    for phase, row in rows.items():
        if phase in BANDWIDTH:
            assert row["kind"] == "data" and row["io500_unit"] == "GiB/s"
            assert row["operation"] == phase.rpartition("-")[2]
            figures[phase] = row["bytes"] / 2**30 / row["MeanTime"]
        else:
            assert row["kind"] == "metadata" and row["io500_unit"] == "kIOPS"
            figures[phase] = row["items"] / row["time_mean_s"] / 1000
        assert row["tasks" if row["kind"] == "metadata" else "numTasks"] == RANKS
        assert figures[phase] > 0
        assert row["io500_rate"] == pytest.approx(figures[phase], rel=1e-9)
    # Reads read what was written; stat, read and delete what was created.
    assert rows["ior-easy-read"]["bytes"] == rows["ior-easy-write"]["bytes"] > 0
    assert rows["ior-hard-read"]["bytes"] == rows["ior-hard-write"]["bytes"] > 0
    assert rows["ior-hard-write"]["transferSize"] == 47008
    assert rows["ior-hard-write"]["access"] == "single-shared-file"
    assert rows["ior-easy-write"]["access"] == "file-per-process"
    assert rows["ior-easy-read"]["verify_errors"] == rows["ior-hard-read"]["verify_errors"] == 0
    assert rows["mdtest-hard-read"]["verify_errors"] == 0 and document["verify_errors"] == 0
    # IOR -e and -R, mdtest -Y and -X, as the reference passes them.
    checks = document["suite"]["checks"]
    assert checks["fsync_after_write"] == ["ior-easy-write", "ior-hard-write"]
    assert checks["verify_read"] == ["ior-easy-read", "ior-hard-read", "mdtest-hard-read"]
    assert checks["sync_after_create"]["phases"] == ["mdtest-easy-write", "mdtest-hard-write"]
    for family in ("mdtest-easy", "mdtest-hard"):
        created = rows[f"{family}-write"]["items"]
        assert created > 0 and created % RANKS == 0
        for phase in PHASES:
            if phase.startswith(family):
                assert rows[phase]["items"] == created
    assert rows["mdtest-easy-write"]["access"] == "unique-dir-per-rank"
    assert rows["mdtest-hard-write"]["access"] == "shared-dir"
    assert rows["mdtest-hard-write"]["write_bytes"] == 3901
    # find scanned every file of the tree (the ior files, the mdtest files) and
    # matched mdtest-hard's files named *01*: 3901 bytes, newer than the timestamp.
    easy, hard = rows["mdtest-easy-write"]["items"], rows["mdtest-hard-write"]["items"]
    assert rows["find"]["items"] == RANKS + 1 + easy + hard
    assert rows["find"]["found"] == expected_found(int(hard) // RANKS)
    if stonewall_s == 0:  # the ceilings end the phases: every file is there
        assert rows["find"]["found"] == expected_found(HARD_FILES) == RANKS
    # The score as IO500 computes it, from the phases.
    bandwidth = math.prod(figures[p] for p in BANDWIDTH) ** (1 / len(BANDWIDTH))
    others = [p for p in PHASES if p not in BANDWIDTH]
    metadata = math.prod(figures[p] for p in others) ** (1 / len(others))
    assert document["bandwidth"] == pytest.approx(bandwidth, rel=1e-9)
    assert document["metadata"] == pytest.approx(metadata, rel=1e-9)
    assert document["score"] == pytest.approx(math.sqrt(bandwidth * metadata), rel=1e-9)
    assert document["suite"]["name"] == "io500-quick" and document["suite"]["target"] == target
    recorded = manifest(run_dir)["suite"]
    assert recorded.items() <= document["suite"].items() and recorded["stonewall_s"] == stonewall_s
    report = (run_dir / "report.md").read_text()
    assert "io500-quick score" in report and "mdtest-hard-delete" in report
    # io500-quick is a short run: never a valid IO500 result, and it says why.
    assert document["valid"] is False
    reasons = document["invalid_reasons"]
    assert reasons[0].startswith("io500-quick is a short test run")
    assert f"stonewall {stonewall_s:g} s: IO500 requires its stonewall-time of 300 s" in reasons
    assert not rows["mdtest-hard-write"]["valid"] and rows["mdtest-hard-read"]["valid"]
    assert "not a valid IO500 result" in report and "[INVALID]" in report
    return document


def fsyncs_by_client(run_dir: Path) -> dict[str, int]:
    """The engine clients' fsync RPCs in the run's traces, per client."""
    client = load_traces(sorted((run_dir / "traces").glob("*.bftrace"))).kind("rpc_client")
    fsyncs = client[client["op"].astype(str) == "fsync"]
    counts = fsyncs["node"].astype(str).value_counts()
    return {str(name): int(count) for name, count in counts.items() if count}


def test_io500_quick_on_benchfs_and_on_a_posix_directory_then_compared(tmp_path: Path) -> None:
    target = tmp_path / "posix"
    target.mkdir()
    # BenchFS without a stonewall (every phase to its small ceiling), the disk
    # with io500-quick as it ships.
    runs = (suite_args(tmp_path, "engine", 0.0),
            quick_args(tmp_path, "disk", "--set", f"workload.target=posix:{target}"))  # fmt: skip
    for args in runs:
        done = benchfs_run([*args, "--json"], timeout=300)
        assert done.returncode == 0, done.stderr
        printed = json.loads(done.stdout)
        assert {"score", "bandwidth", "metadata"} <= printed.keys()
    engine, disk = run_dirs(tmp_path / "results")
    assert check_suite(engine, "benchfs", 0.0)["score"] > 0
    # Every rank fsynced its ior-easy file and the ior-hard file (durability
    # "none": no close fsyncs), the same number of RPCs each.
    fsyncs = fsyncs_by_client(engine)
    assert len(fsyncs) == RANKS and len(set(fsyncs.values())) == 1, fsyncs
    assert min(fsyncs.values()) >= 2, fsyncs
    assert "native client" in summary(engine)["suite"]["checks"]["sync_after_create"]["how"]
    assert summary(disk)["suite"]["checks"]["sync_after_create"]["how"].startswith("sync(2)")
    assert check_suite(disk, f"posix:{target}", 1.0)["score"] > 0
    assert list(target.iterdir()) == []  # the suite's files are gone
    compared = subprocess.run(
        [sys.executable, "-m", "benchfs", "compare", str(engine), str(disk), "--json"],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=120,
    )
    assert compared.returncode == 0, compared.stderr
    metrics = json.loads(compared.stdout)["metrics"]
    by_phase = {(row["phase"], row["metric"]) for row in metrics}
    for metric in ("score", "bandwidth_GiB_s", "metadata_kIOPS"):
        assert ("suite score", metric) in by_phase
    for phase in PHASES:
        assert (phase, "io500_rate") in by_phase
    notes = json.loads(compared.stdout)["notes"]
    assert [note.split(" ", 1)[0] for note in notes] == ["A", "B"]
    assert all("not a valid IO500 result: io500-quick is a short" in note for note in notes)


needs_ior_and_mdtest = pytest.mark.skipif(
    not all(shutil.which(tool, path=IOR_SEARCH) for tool in ("ior", "mdtest", "mpirun")),
    reason="ior, mdtest or mpirun not found (PATH, $IOR_BIN_DIR, /opt/ior/bin)",
)


def check_tool_suite(run_dir: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """A suite run with IOR and mdtest: every phase by its tool, the score from
    the phases; the summary and its rows by phase."""
    document = summary(run_dir)
    rows = {row["phase"]: row for row in document["phases"]}
    assert list(rows) == PHASES
    for phase, row in rows.items():
        tool = "benchfs" if phase == "find" else phase.split("-")[0]
        assert row["tool"] == tool and row["io500_rate"] > 0
    assert document["valid"] is False and not rows["ior-easy-write"]["valid"]
    figures = [rows[p]["io500_rate"] for p in PHASES]
    bandwidth = math.prod(rows[p]["io500_rate"] for p in BANDWIDTH) ** (1 / len(BANDWIDTH))
    metadata = math.prod(f for p, f in zip(PHASES, figures, strict=True)
                         if p not in BANDWIDTH) ** (1 / (len(PHASES) - len(BANDWIDTH)))  # fmt: skip
    assert document["score"] == pytest.approx(math.sqrt(bandwidth * metadata), rel=1e-9)
    return document, rows


@needs_ior_and_mdtest
def test_io500_quick_with_ior_and_mdtest_on_a_posix_directory(tmp_path: Path) -> None:
    target = tmp_path / "posix"
    target.mkdir()
    tools = Path(str(shutil.which("ior", path=IOR_SEARCH))).parent
    args = suite_args(tmp_path, "tools", 1.0, "--set", f"workload.target=posix:{target}",
                      "--set", "suite.tool=ior", "--set", f"suite.tool_path={tools}")  # fmt: skip
    done = benchfs_run([*args, "--json"], timeout=300)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    _, rows = check_tool_suite(run_dir)
    assert rows["ior-easy-write"]["bwMeanMIB"] / 1024 == pytest.approx(
        rows["ior-easy-write"]["io500_rate"]
    )
    assert rows["find"]["found"] > 0  # mdtest-hard's files named *01*
    tool = manifest(run_dir)["tool"]
    assert tool["name"] == "ior+mdtest" and tool["version"].startswith("IOR-")
    assert list(tool["command_lines"]) == [p for p in PHASES if p != "find"]
    hard_read = tool["command_lines"]["mdtest-hard-read"]
    assert hard_read[0] == str(tools / "mdtest") and "-E" in hard_read and "-X" in hard_read
    assert (run_dir / "workload" / "tool" / "ior-hard-write.json").is_file()
    assert list(target.iterdir()) == []
