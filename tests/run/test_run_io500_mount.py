"""`benchfs run --suite io500-quick --interface mount` end to end: 4 daemons,
every node's FUSE mount, the suite's phases through it, once with the
built-in loops (the ranks in their own node's mount point) and once with
IOR and mdtest (each rank in its own node's mount point). Every IO500 phase
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
    # find, through the first node's mount, scanned every file the tools made.
    easy, hard = rows["mdtest-easy-write"]["items"], rows["mdtest-hard-write"]["items"]
    assert rows["find"]["items"] == RANKS + 1 + easy + hard
    assert rows["find"]["found"] == expected_found(int(hard) // RANKS)
    tool = manifest(run_dir)["tool"]
    assert tool["name"] == "ior+mdtest" and tool["version"].startswith("IOR-")
    # Each rank worked in its own node's mount point, the tools' paths relative to it.
    hard_write = tool["command_lines"]["mdtest-hard-write"]
    work = f"benchfs-{token_of(run_dir)}-p0"
    assert hard_write[hard_write.index("-d") + 1] == f"{work}/io500/mdtest-hard", hard_write
    launched = tool["launched"]["mdtest-hard-write"]
    assert launched[launched.index("benchfs.node.workdir") + 1] == "exec", launched
    check_nothing_left(tmp_path, run_dir)
