"""`benchfs bench metadata` for real: the metadata workload on a local
4-daemon cluster through the native client and through the FUSE mount, and
by plain POSIX calls on the same disk (few files and directories); the real
mdtest through the mount as a fourth side when it is found, named as left
out when it is not."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import IOR_SEARCH, environment, needs_mdtest, needs_mount

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

DIR_NAMES = ["Directory creation", "Directory stat", "Directory removal"]
FILE_NAMES = ["File creation", "File stat", "File read", "File removal"]
NAMES = [*DIR_NAMES, *FILE_NAMES]


def benchfs(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchfs", *args],
        capture_output=True, text=True, env=env or environment(), timeout=280,
    )  # fmt: skip


def bench(tmp_path: Path, directory: Path, *extra: str) -> dict:  # type: ignore[type-arg]
    args = ["bench", "metadata", "--dir", str(directory), "--items", "30", "--json"]
    args += ["--write-bytes", "100", "--read-bytes", "100", *extra]
    args += ["--results-dir", str(tmp_path / "results")]
    done = benchfs(*args)
    assert done.returncode == 0, done.stderr
    report: dict = json.loads(done.stdout)  # type: ignore[type-arg]
    return report


def without_mdtest(tmp_path: Path) -> tuple[dict[str, str], str]:
    """An environment where mdtest is not found (PATH without it, $IOR_BIN_DIR
    an empty directory) and the places searched, as benchfs names them."""
    empty = tmp_path / "no-tools"
    empty.mkdir()
    path = [part for part in os.environ.get("PATH", "").split(os.pathsep)
            if part and shutil.which("mdtest", path=part) is None]  # fmt: skip
    if shutil.which("mdtest", path=f"/opt/ior/bin{os.pathsep}{empty}") is not None:
        pytest.skip("mdtest is in /opt/ior/bin, which benchfs always searches")
    env = {**environment(), "PATH": os.pathsep.join(path), "IOR_BIN_DIR": str(empty)}
    return env, f"PATH, {empty}, /opt/ior/bin"


def check_sides(report: dict, sides: list[str]) -> None:  # type: ignore[type-arg]
    assert report["case"]["ranks"] == 4 and report["case"]["items"] == 30
    phases = report["phases"]
    assert [p["mdtest_name"] for p in phases] == NAMES
    assert [p["object"] for p in phases] == ["dir"] * 3 + ["file"] * 4
    for phase in phases:
        assert phase["run_ops_s"] > 0 and phase["posix_ops_s"] > 0
        assert phase["ratio"] == pytest.approx(phase["run_ops_s"] / phase["posix_ops_s"], rel=0.01)
    assert list(report["results_dirs"]) == sides
    for run_dir in report["results_dirs"].values():
        summary = json.loads((Path(run_dir) / "workload" / "summary.json").read_text())
        assert [p["phase"] for p in summary["phases"]] == ["Tree creation", *NAMES, "Tree removal"]


def test_native_and_posix_with_ratios_and_nothing_left(tmp_path: Path) -> None:
    directory = tmp_path / "disk"
    directory.mkdir()
    report = bench(tmp_path, directory, "--no-mount")
    check_sides(report, ["native", "posix"])
    assert all(p["mount_ops_s"] is None and p["mount_ratio"] is None for p in report["phases"])
    # mdtest runs through the mount: without it, it is left out, saying so.
    assert report["mdtest"] == {
        "ran": False, "binary": None, "args": None, "results_dir": None,
        "skipped": "it runs through the mount, turned off (--no-mount)",
    }  # fmt: skip
    assert all(p["mdtest_ops_s"] is None for p in report["phases"])
    assert list(directory.iterdir()) == [], "the benchmark must remove its files"


@needs_mount
def test_the_mount_as_a_third_side(tmp_path: Path) -> None:
    directory = tmp_path / "disk"
    directory.mkdir()
    report = bench(tmp_path, directory, "--no-mdtest")
    check_sides(report, ["native", "mount", "posix"])
    assert report["mdtest"]["skipped"] == "turned off (--no-mdtest)"
    for phase in report["phases"]:
        assert phase["mount_ops_s"] > 0
        assert phase["mount_ratio"] == pytest.approx(
            phase["mount_ops_s"] / phase["posix_ops_s"], rel=0.01
        )
    assert list(directory.iterdir()) == []


def test_a_bad_kind_is_refused_naming_the_option(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "bench", "metadata", "--kind", "folders",
         "--dir", str(tmp_path)],
        capture_output=True, text=True, env=environment(), timeout=60,
    )  # fmt: skip
    assert done.returncode != 0 and "--kind" in done.stderr and "folders" in done.stderr
    assert "Traceback" not in done.stderr and list(tmp_path.iterdir()) == []


@needs_mount
@needs_mdtest
def test_mdtest_through_the_mount_as_a_fourth_side(tmp_path: Path) -> None:
    binary = shutil.which("mdtest", path=IOR_SEARCH)
    assert binary is not None
    directory = tmp_path / "disk"
    directory.mkdir()
    # The pattern CHFS's figures are published for: 1 server, 2 ranks; the
    # kernel's caches of the mount on, as chfuse's.
    done = benchfs("bench", "metadata", "--dir", str(directory), "--nodes", "1",
                   "--ranks-per-node", "2", "--mount-cache", "1", "--items", "50",
                   "--kind", "files", "--mdtest", "--json",
                   "--results-dir", str(tmp_path / "results"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    case = report["case"]
    assert (case["nodes"], case["ranks_per_node"], case["ranks"]) == (1, 2, 2)
    assert (case["items"], case["mount_cache_s"]) == (50, 1.0)
    assert list(report["results_dirs"]) == ["native", "mount", "mdtest", "posix"]
    side = report["mdtest"]
    assert side["ran"] and side["skipped"] is None
    assert Path(side["binary"]).samefile(binary)
    assert side["args"] == ["-n", "50", "-F", "-u"]  # the pattern other file systems publish
    run_dir = Path(side["results_dir"])
    assert str(run_dir) == report["results_dirs"]["mdtest"]
    # That run was mdtest's own, through the mount, with the other sides' ranks.
    record = json.loads((run_dir / "manifest.json").read_text())
    assert record["status"] == "completed" and record["interface"] == "mount"
    assert record["tool"]["name"] == "mdtest" and record["tool"]["version"].startswith("mdtest-")
    argv = record["tool"]["command_lines"]["job"]
    assert argv[0] == side["binary"] and argv[1:5] == side["args"]
    assert len(record["daemons"]) == 1 and record["ranks"]["per_host"] == {"local0": 2}
    mount = record["effective_config"]["mount"]
    assert (mount["attr_timeout_s"], mount["entry_timeout_s"]) == (1.0, 1.0)
    summary = json.loads((run_dir / "workload" / "summary.json").read_text())
    rows = {row["phase"]: row for row in summary["phases"]}
    assert all((rows[name]["tool"], rows[name]["tasks"]) == ("mdtest", 2) for name in FILE_NAMES)
    assert [p["mdtest_name"] for p in report["phases"]] == FILE_NAMES
    for phase in report["phases"]:
        assert phase["mdtest_ops_s"] > 0 and phase["mount_ops_s"] > 0
        assert phase["mdtest_ops_s"] == pytest.approx(
            rows[phase["mdtest_name"]]["rate_mean_ops_s"], rel=0.01
        )
        # built-in ranks through the mount over mdtest through the mount
        assert phase["mount_mdtest_ratio"] == pytest.approx(
            phase["mount_ops_s"] / phase["mdtest_ops_s"], rel=0.01
        )
    assert list(directory.iterdir()) == []


@needs_mount
def test_without_mdtest_the_side_is_left_out_naming_where_it_was_looked_for(
    tmp_path: Path,
) -> None:
    env, places = without_mdtest(tmp_path)
    directory = tmp_path / "disk"
    directory.mkdir()
    done = benchfs("bench", "metadata", "--dir", str(directory), "--nodes", "1", "--items", "20",
                   "--kind", "files", "--results-dir", str(tmp_path / "results"),
                   env={**env, "COLUMNS": "80"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())  # the line wraps at 80 columns
    assert f"mdtest on the mount left out: mdtest not found on {places}: set --mdtest-path" in said
    assert "results (mount)" in done.stdout and "results (mdtest)" not in done.stdout
    assert list(directory.iterdir()) == []


def test_mdtest_asked_for_and_not_found_is_one_line_naming_where_it_was_looked_for(
    tmp_path: Path,
) -> None:
    env, places = without_mdtest(tmp_path)
    args = ["bench", "metadata", "--dir", str(tmp_path), "--kind", "files"]
    done = benchfs(*args, "--mdtest", env=env)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        f"error: mdtest not found on {places}: set --mdtest-path to the mdtest binary or "
        "its directory"
    ]
    missing = tmp_path / "no-tools"
    done = benchfs(*args, "--mdtest-path", str(missing), env=env)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        f"error: mdtest not found: {missing / 'mdtest'}: no such file or directory "
        f"(--mdtest-path = '{missing}')"
    ]
    done = benchfs(*args, "--mdtest", "--no-mount", env=env)
    assert done.returncode != 0 and "--no-mount" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert [path.name for path in tmp_path.iterdir()] == ["no-tools"]
