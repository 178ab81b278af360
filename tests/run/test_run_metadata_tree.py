"""mdtest's tree (-z, -b) and directory rename (-U) through `benchfs run`
with 4 ranks: on BenchFS (4 daemons, native client), through its FUSE
mount and on a posix: directory. The tree's rows under mdtest's names and counts, the items
spread over its directories, the rename run on the directory and reported
as not supported on BenchFS, nothing left behind; and the tree's keys
checked before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_helpers import benchfs_run, mount_missing, run_dirs, small_args, summary

from analysis.jsonlines import read_json_lines

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

RANKS = 4
# -n 40 -z 2 -b 2: 7 directories per tree, 5 items in each, 35 per rank.
TREE_DIRS, PER_RANK = 7, 35
PHASES = [
    "Tree creation", "Directory creation", "Directory stat", "Directory rename",
    "Directory removal", "File creation", "File stat", "File read", "File removal",
    "Tree removal",
]  # fmt: skip


@pytest.mark.parametrize("target", ["benchfs", "mount", "posix"])
def test_tree_and_rename_on_each_target(tmp_path: Path, target: str) -> None:
    if target == "mount" and mount_missing():
        pytest.skip(f"no FUSE mount here: {mount_missing()}")
    disk = tmp_path / "disk"
    disk.mkdir()
    on_disk = {
        "posix": ["--set", f"workload.target=posix:{disk}"],
        "mount": ["--interface", "mount"],
    }.get(target, [])
    args = small_args(
        tmp_path,
        "--metadata", "only", "--metadata-kind", "both", "--metadata-items", "40",
        "--metadata-tree-depth", "2", "--metadata-branch-factor", "2",
        "--set", "metadata.phases=create,stat,read,rename,remove",
        "--set", "metadata.repetitions=2",
        *on_disk,
    )  # fmt: skip
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    document = summary(run_dir)
    parameters = document["metadata_parameters"]
    assert (parameters["items"], parameters["tree_depth"], parameters["branch_factor"]) == (
        PER_RANK, 2, 2,
    )  # fmt: skip
    rows = {row["phase"]: row for row in document["phases"]}
    assert list(rows) == PHASES
    for name in ("Tree creation", "Tree removal"):
        tree = rows[name]
        # mdtest's count: one tree's directories, though every rank made its own.
        assert (tree["object"], tree["items"], tree["items_per_rank"]) == ("tree", 7, 7)
        assert 0 < tree["rate_min_ops_s"] <= tree["rate_max_ops_s"]
        assert tree["latency_ops"] == 2 * RANKS * TREE_DIRS
    for name in PHASES[1:-1]:
        if name == "Directory rename" and target != "posix":
            continue
        assert rows[name]["items"] == RANKS * PER_RANK, name
        assert rows[name]["rate_mean_ops_s"] > 0, name
    rename = rows["Directory rename"]
    if target != "posix":
        assert "not supported by the target" in rename["unsupported"]
        assert rename["rate_mean_ops_s"] is None and rename["latency_ops"] is None
    else:
        assert rename["unsupported"] is None and rename["latency_ops"] == 2 * RANKS * PER_RANK
    ranks = read_json_lines(run_dir / "workload" / "ranks.jsonl")
    assert {r["ops"] for r in ranks if r["phase"].startswith("Tree")} == {TREE_DIRS}
    assert {r["ops"] for r in ranks if not r["phase"].startswith("Tree")} == {PER_RANK}
    report = (run_dir / "report.md").read_text()
    assert "Tree creation" in report and "Tree removal" in report
    assert list(disk.iterdir()) == []  # the trees and the run's directory are gone


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--metadata-tree-depth", "-1"], "metadata.tree_depth"),
        (["--metadata-branch-factor", "0"], "metadata.branch_factor"),
        (["--metadata-tree-depth", "3", "--metadata-branch-factor", "4", "--metadata-items",
          "50"], "85 directories per tree, more than metadata.items = 50"),
        (["--set", "metadata.phases=create,rename,remove"], "metadata.kind"),
    ],
)  # fmt: skip
def test_bad_tree_keys_are_refused_naming_the_key(
    tmp_path: Path, extra: list[str], words: str
) -> None:
    done = benchfs_run(small_args(tmp_path, "--metadata", "only", *extra))
    assert done.returncode != 0
    assert words in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "results").exists() or not run_dirs(tmp_path / "results")
