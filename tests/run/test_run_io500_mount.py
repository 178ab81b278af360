"""`benchfs run --suite io500-quick --interface mount` end to end: 4 daemons,
every node's FUSE mount, the suite's phases through it, once with the
built-in loops (the ranks in their own node's mount point) and once with
IOR and mdtest (one job in the first node's mount point). Every IO500 phase
is there, the score is recomputed from the phases, and no mount, process
or file of the run is left."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from run_helpers import assert_nothing_left, benchfs_run, manifest, needs_mount, run_dirs
from test_run_io500 import (
    IOR_SEARCH,
    RANKS,
    check_suite,
    check_tool_suite,
    expected_found,
    needs_ior_and_mdtest,
    suite_args,
)
from test_run_mount import no_mount_under, token_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), needs_mount]


def check_nothing_left(tmp_path: Path, run_dir: Path) -> None:
    record = manifest(run_dir)
    assert record["status"] == "completed" and record["interface"] == "mount"
    assert no_mount_under(tmp_path)
    assert_nothing_left(tmp_path, token_of(run_dir))


def test_io500_quick_through_the_mount_with_the_built_in_loops(tmp_path: Path) -> None:
    done = benchfs_run([*suite_args(tmp_path, "mount", 0.0, "--interface", "mount"), "--json"])
    assert done.returncode == 0, done.stderr
    assert {"score", "bandwidth", "metadata"} <= json.loads(done.stdout).keys()
    (run_dir,) = run_dirs(tmp_path / "results")
    document = check_suite(run_dir, "benchfs", 0.0)
    assert document["score"] > 0 and document["suite"]["interface"] == "mount"
    for fs in manifest(run_dir)["mount"]["file_systems"].values():
        assert fs["fs_type"].startswith("fuse"), fs
    check_nothing_left(tmp_path, run_dir)


@needs_ior_and_mdtest
def test_io500_quick_through_the_mount_with_ior_and_mdtest(tmp_path: Path) -> None:
    tools = Path(str(shutil.which("ior", path=IOR_SEARCH))).parent
    args = suite_args(tmp_path, "tools", 1.0, "--interface", "mount",
                      "--set", "suite.tool=ior", "--set", f"suite.tool_path={tools}")  # fmt: skip
    done = benchfs_run([*args, "--json"], timeout=300)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    document, rows = check_tool_suite(run_dir)
    for row in rows.values():
        assert (row["target"], row["interface"]) == ("benchfs", "mount")
    assert (document["suite"]["target"], document["suite"]["interface"]) == ("benchfs", "mount")
    # find, here through the first node's mount, scanned every file the tools made.
    easy, hard = rows["mdtest-easy-write"]["items"], rows["mdtest-hard-write"]["items"]
    assert rows["find"]["items"] == RANKS + 1 + easy + hard
    assert rows["find"]["found"] == expected_found(int(hard) // RANKS)
    tool = manifest(run_dir)["tool"]
    assert tool["name"] == "ior+mdtest" and tool["version"].startswith("IOR-")
    # The tools worked in the first node's mount point.
    hard_write = tool["command_lines"]["mdtest-hard-write"]
    assert any("-mnt-p0/local0/" in arg for arg in hard_write), hard_write
    check_nothing_left(tmp_path, run_dir)


@needs_ior_and_mdtest
def test_ior_on_the_mount_across_hosts_is_refused_before_anything_starts(tmp_path: Path) -> None:
    tools = Path(str(shutil.which("ior", path=IOR_SEARCH))).parent
    hostfile = tmp_path / "hosts"
    hostfile.write_text("localhost\n")
    args = suite_args(tmp_path, "tools", 1.0, "--interface", "mount",
                      "--set", "launcher.name=mpirun", "--set", "suite.tool=ior",
                      "--set", f"suite.tool_path={tools}")  # fmt: skip
    done = benchfs_run(["--nodes", str(hostfile), *args], timeout=60)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith(
        "error: suite.tool = 'ior' on the mount needs every node on this machine"
    ), line
    assert no_mount_under(tmp_path)
