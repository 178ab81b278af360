"""The metadata workload through `benchfs run` on every target: a posix:
directory (plain POSIX calls in the engine, no daemons) and BenchFS through
its FUSE mount (4 daemons, 4 mounts, 4 ranks); the rows and rates under
mdtest's names, the directory phases before the file phases, every file
and directory removed, nothing of the run left, and `benchfs compare` of
the two phase by phase."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from run_helpers import (
    assert_nothing_left,
    benchfs_run,
    environment,
    manifest,
    needs_mount,
    run_dirs,
    small_args,
    summary,
)
from test_run_mount import no_mount_under, token_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

RANKS = 4
ITEMS = 40
NAMES = ["File creation", "File stat", "File read", "File removal"]
DIR_NAMES = ["Directory creation", "Directory stat", "Directory removal"]
TREE_NAMES = ("Tree creation", "Tree removal")
RENAME = "Directory rename"
# mdtest -U too: the directory rename, between stat and removal.
WITH_RENAME = ("--set", "metadata.phases=create,stat,read,rename,remove")


def metadata_args(tmp_path: Path, *extra: str, mode: str = "only") -> list[str]:
    return small_args(
        tmp_path,
        "--metadata", mode,
        "--metadata-items", str(ITEMS),
        "--set", "metadata.write_bytes=3901",
        "--set", "metadata.read_bytes=3901",
        *extra,
    )  # fmt: skip


def check_rows(
    run_dir: Path, data_phases: tuple[str, ...] = (), names: tuple[str, ...] = tuple(NAMES)
) -> dict[str, Any]:
    document = summary(run_dir)
    rows = [row for row in document["phases"] if row.get("kind") == "metadata"]
    assert [row["phase"] for row in document["phases"]] == [
        *data_phases, TREE_NAMES[0], *names, TREE_NAMES[1],
    ]  # fmt: skip
    for tree in (row for row in rows if row["phase"] in TREE_NAMES):
        # Depth 0: one directory per tree, a tree per rank (the default unique_dir).
        assert (tree["object"], tree["items"], tree["items_per_rank"]) == ("tree", 1, 1)
        assert tree["rate_mean_ops_s"] > 0
    rows = [row for row in rows if row["phase"] not in TREE_NAMES and not row.get("unsupported")]
    names = tuple(n for n in names if n in {row["phase"] for row in rows})
    for row in rows:
        assert row["items"] == RANKS * ITEMS and row["tasks"] == RANKS
        assert 0 < row["rate_min_ops_s"] <= row["rate_mean_ops_s"] <= row["rate_max_ops_s"]
        assert row["p50_us"] <= row["p99_us"] <= row["max_us"]
    lines = (run_dir / "workload" / "ranks.jsonl").open()
    ranks = [r for r in map(json.loads, lines) if r["phase"] in names]
    assert len(ranks) == len(names) * RANKS and all(r["ops"] == ITEMS for r in ranks)
    for name in {"File creation", "File read"} & set(names):
        assert sum(r["bytes"] for r in ranks if r["phase"] == name) == RANKS * ITEMS * 3901
    assert all(r["bytes"] == 0 for r in ranks if r["phase"] in DIR_NAMES)
    return document


def test_data_then_metadata_on_a_posix_directory(tmp_path: Path) -> None:
    target = tmp_path / "disk"
    target.mkdir()
    args = metadata_args(tmp_path, "--set", f"workload.target=posix:{target}", mode="with-data")
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    document = check_rows(run_dir, ("write", "read"))
    assert document["parameters"]["API"] == "POSIX"
    assert list(target.iterdir()) == []  # the run's directory and its trees are gone


def test_directories_on_a_posix_directory_are_made_and_removed(tmp_path: Path) -> None:
    target = tmp_path / "disk"
    target.mkdir()
    args = metadata_args(
        tmp_path,
        "--metadata-kind", "dirs",
        "--set", f"workload.target=posix:{target}",
        "--set", "workload.keep_files=true",
        "--set", "metadata.unique_dir=false",
    )  # fmt: skip
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    document = check_rows(run_dir, names=tuple(DIR_NAMES))
    assert {row["access"] for row in document["phases"]} == {"shared-dir"}
    # The kept run directory holds the prefix: the shared tree went in its removal.
    (prefix,) = target.glob("benchfs-*/mdtest")
    assert prefix.is_dir() and list(prefix.iterdir()) == []


@needs_mount
def test_metadata_only_through_the_mount_then_compared_with_the_disk(tmp_path: Path) -> None:
    both = ("--metadata-kind", "both", *WITH_RENAME)
    done = benchfs_run(metadata_args(tmp_path, "--interface", "mount", *both))
    assert done.returncode == 0, done.stderr
    (mounted,) = run_dirs(tmp_path / "results")
    with_rename = (*DIR_NAMES[:2], RENAME, DIR_NAMES[2], *NAMES)
    document = check_rows(mounted, names=with_rename)
    # BenchFS renames no directory (EXDEV): the row says so and has no figures.
    (refused,) = [row for row in document["phases"] if row["phase"] == RENAME]
    assert "not supported by the target" in refused["unsupported"]
    assert refused["rate_mean_ops_s"] is None
    assert "not supported by the target" in (mounted / "report.md").read_text()
    record = manifest(mounted)
    assert record["interface"] == "mount" and record["status"] == "completed"
    for fs in record["mount"]["file_systems"].values():
        assert fs["fs_type"].startswith("fuse"), fs
    assert no_mount_under(tmp_path)
    assert_nothing_left(tmp_path, token_of(mounted))
    target = tmp_path / "disk"
    target.mkdir()
    done = benchfs_run(metadata_args(tmp_path, "--set", f"workload.target=posix:{target}", *both))
    assert done.returncode == 0, done.stderr
    (disk,) = [d for d in run_dirs(tmp_path / "results") if d != mounted]
    renamed = check_rows(disk, names=with_rename)
    (ran,) = [row for row in renamed["phases"] if row["phase"] == RENAME]
    assert ran["unsupported"] is None and ran["rate_mean_ops_s"] > 0
    compared = subprocess.run(
        [sys.executable, "-m", "benchfs", "compare", str(mounted), str(disk), "--json"],
        capture_output=True, text=True, env=environment(), timeout=120,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    rates = {
        row["phase"]: row
        for row in json.loads(compared.stdout)["metrics"]
        if row["metric"] == "rate_mean_ops_s"
    }
    assert set(rates) == {*DIR_NAMES, *NAMES, *TREE_NAMES, RENAME}
    assert all(row["A"] > 0 and row["B"] > 0 for name, row in rates.items() if name != RENAME)
    # The mount's rename has no figure; the disk's has.
    assert rates[RENAME]["A"] is None and rates[RENAME]["B"] > 0
