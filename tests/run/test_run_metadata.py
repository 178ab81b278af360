"""The metadata workload through `benchfs run` on the embedded local
cluster (4 daemons, 4 MPI ranks): mdtest's file and directory phases, a
directory per rank and one shared, the stonewall with its wear-out, the
summary under mdtest's names, the report, and `benchfs compare` of two such
runs.

What the phases leave in the namespace is checked against the daemons by
tests/rpc/test_metadata_phase.py; here the figures the ranks report must
add up (every file created was stat-ed, read and removed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from run_helpers import benchfs_run, environment, run_dirs, small_args, summary

from analysis.jsonlines import read_json_lines

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

RANKS = 4
ITEMS = 40
NAMES = ["File creation", "File stat", "File read", "File removal"]
DIR_NAMES = ["Directory creation", "Directory stat", "Directory removal"]
TREE_NAMES = ["Tree creation", "Tree removal"]


def with_tree(names: list[str]) -> list[str]:
    """A repetition's phases: the tree made before the items, removed after them."""
    return ["Tree creation", *names, *(["Tree removal"] if names[-1].endswith("removal") else [])]


def metadata_args(tmp_path: Path, *extra: str) -> list[str]:
    return small_args(
        tmp_path,
        "--set", "metadata.mode=only",
        "--set", f"metadata.items={ITEMS}",
        "--set", "metadata.write_bytes=3901",
        "--set", "metadata.read_bytes=3901",
        *extra,
    )  # fmt: skip


def metadata_rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [row for row in document["phases"] if row.get("kind") == "metadata"]


def item_rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The phases on files and directories, without the tree's."""
    return [row for row in metadata_rows(document) if row["object"] != "tree"]


def test_every_phase_with_a_directory_per_rank_and_one_shared(tmp_path: Path) -> None:
    config = tmp_path / "md.toml"
    config.write_text("[metadata]\nunique_dir = [true, false]\nrepetitions = 2\n")
    done = benchfs_run([*metadata_args(tmp_path), "--config", str(config), "--json"])
    assert done.returncode == 0, done.stderr
    for run_dir, access in zip(
        run_dirs(tmp_path / "results"), ["unique-dir-per-rank", "shared-dir"], strict=True
    ):
        document = summary(run_dir)
        assert [row["phase"] for row in metadata_rows(document)] == with_tree(NAMES)
        rows = item_rows(document)
        # Depth 0: the tree is each rank's directory, or the one shared (rank 0's).
        for tree in (r for r in metadata_rows(document) if r["object"] == "tree"):
            assert (tree["items"], tree["items_per_rank"], tree["access"]) == (1, 1, access)
            assert tree["rate_mean_ops_s"] > 0 and tree["latency_ops"] >= 2
        assert not [row for row in document["phases"] if row.get("kind") != "metadata"]
        assert "parameters" not in document  # IOR's: no data workload ran
        assert document["metadata_parameters"]["unique_dir"] == (access == "unique-dir-per-rank")
        for row in rows:
            assert row["tool"] == "benchfs" and row["access"] == access
            assert (row["tasks"], row["repetitions"]) == (RANKS, 2)
            assert row["items"] == RANKS * ITEMS and row["items_per_rank"] == ITEMS
            assert 0 < row["rate_min_ops_s"] <= row["rate_mean_ops_s"] <= row["rate_max_ops_s"]
            assert row["rate_stddev_ops_s"] >= 0
            assert row["latency_ops"] == 2 * RANKS * ITEMS
            assert row["p50_us"] <= row["p99_us"] <= row["max_us"]
        every = read_json_lines(run_dir / "workload" / "ranks.jsonl")
        made = [r["ops"] for r in every if r["phase"] == "Tree creation"]
        # Two repetitions: every rank made its tree, or rank 0 the shared one.
        trees = RANKS if access == "unique-dir-per-rank" else 1
        assert sorted(made) == [0] * 2 * (RANKS - trees) + [1] * 2 * trees
        ranks = [r for r in every if r["phase"] not in TREE_NAMES]
        assert len(ranks) == 2 * len(NAMES) * RANKS
        by_phase = {name: [r for r in ranks if r["phase"] == name] for name in NAMES}
        assert all(r["ops"] == ITEMS for r in ranks)
        assert sum(r["bytes"] for r in by_phase["File creation"]) == 2 * RANKS * ITEMS * 3901
        assert sum(r["bytes"] for r in by_phase["File read"]) == 2 * RANKS * ITEMS * 3901
        repetitions = [r for r in document["repetitions"] if r["phase"] == "File stat"]
        assert [r["repetition"] for r in repetitions] == [0, 1]
        assert np.mean([r["rate_ops_s"] for r in repetitions]) == pytest.approx(
            rows[1]["rate_mean_ops_s"]
        )
        latency = np.load(run_dir / "workload" / "latency-File creation-1.npy")
        assert latency.size == RANKS * ITEMS
        report = (run_dir / "report.md").read_text()
        assert "Metadata phases" in report and "File removal" in report


def test_stonewall_wears_out_and_later_phases_use_what_was_created(tmp_path: Path) -> None:
    # A million files per rank cannot be created before a 0.3 s stonewall.
    args = small_args(
        tmp_path,
        "--set", "metadata.mode=with-data",
        "--set", "metadata.items=1000000",
        "--set", "metadata.stonewall_s=0.3",
    )  # fmt: skip
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    document = summary(run_dir)
    assert [row["phase"] for row in document["phases"]] == ["write", "read", *with_tree(NAMES)]
    create = item_rows(document)[0]
    assert create["stonewalled"] and create["stonewall_s"] == 0.3
    assert 0 < create["stonewall_items_min"] <= create["stonewall_items_max"] < 1_000_000
    rows = read_json_lines(run_dir / "workload" / "ranks.jsonl")
    most = max(r["stonewall_ops"] for r in rows if r["phase"] == "File creation")
    assert most == create["stonewall_items_max"]
    for name in NAMES:
        # Wear-out: every rank caught up with the furthest; then every phase did those.
        assert {r["ops"] for r in rows if r["phase"] == name} == {most}, name


def test_compare_of_two_metadata_runs(tmp_path: Path) -> None:
    args = metadata_args(tmp_path, "--set", "metadata.repetitions=3")
    for _ in range(2):
        done = benchfs_run(args)
        assert done.returncode == 0, done.stderr
    a, b = run_dirs(tmp_path / "results")
    compared = subprocess.run(
        [sys.executable, "-m", "benchfs", "compare", str(a), str(b), "--json"],
        capture_output=True, text=True, env=environment(), timeout=300,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    rows = json.loads(compared.stdout)["metrics"]
    rates = {row["phase"]: row for row in rows if row["metric"] == "rate_mean_ops_s"}
    assert set(rates) == set(with_tree(NAMES))
    for name, row in rates.items():
        assert row["n_A"] == row["n_B"] == 3, row
        assert row["verdict"] in ("changed", "within noise"), row
        phase_a = next(p for p in summary(a)["phases"] if p["phase"] == name)
        assert row["A"] == pytest.approx(phase_a["rate_mean_ops_s"])


def test_without_a_remove_phase_each_repetition_starts_empty(tmp_path: Path) -> None:
    # The second repetition's exclusive creates would fail on files left behind.
    args = metadata_args(tmp_path, "--set", "metadata.phases=create,stat")
    args += ["--set", "metadata.repetitions=2", "--set", "metadata.read_bytes=0"]
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    rows = metadata_rows(summary(run_dir))
    # The tree goes untimed too, so its creation in the next repetition succeeds.
    assert [row["phase"] for row in rows] == ["Tree creation", "File creation", "File stat"]
    assert all(row["repetitions"] == 2 for row in rows)
    assert all(row["items"] == RANKS * ITEMS for row in rows[1:])


def test_directory_phases_run_before_the_file_phases(tmp_path: Path) -> None:
    config = tmp_path / "md.toml"
    config.write_text('[metadata]\nkind = "both"\nunique_dir = [true, false]\nrepetitions = 2\n')
    done = benchfs_run([*metadata_args(tmp_path), "--config", str(config)])
    assert done.returncode == 0, done.stderr
    for run_dir in run_dirs(tmp_path / "results"):
        document = summary(run_dir)
        assert document["metadata_parameters"]["kind"] == "both"
        rows = {row["phase"]: row for row in metadata_rows(document)}
        assert list(rows) == with_tree([*DIR_NAMES, *NAMES])
        for name in DIR_NAMES:
            row = rows[name]
            assert (row["object"], row["tasks"], row["repetitions"]) == ("directory", RANKS, 2)
            assert row["items"] == RANKS * ITEMS and row["items_per_rank"] == ITEMS
            assert (row["write_bytes"], row["read_bytes"]) == (None, None)
            assert 0 < row["rate_min_ops_s"] <= row["rate_mean_ops_s"] <= row["rate_max_ops_s"]
            assert row["latency_ops"] == 2 * RANKS * ITEMS
            latency = np.load(run_dir / "workload" / f"latency-{name}-1.npy")
            assert latency.size == RANKS * ITEMS
        ranks = read_json_lines(run_dir / "workload" / "ranks.jsonl")
        ranks = [r for r in ranks if r["phase"] not in TREE_NAMES]
        assert len(ranks) == 2 * len([*DIR_NAMES, *NAMES]) * RANKS
        assert all(r["ops"] == ITEMS for r in ranks)
        assert all(r["bytes"] == 0 for r in ranks if r["phase"] in DIR_NAMES)
        # Ranks run the phases in mdtest's order: every mkdir before any file is made.
        by_phase = {n: [r for r in ranks if r["phase"] == n and r["repetition"] == 0]
                    for n in [*DIR_NAMES, *NAMES]}  # fmt: skip
        ends = [max(r["end_unix_ns"] for r in by_phase[n]) for n in [*DIR_NAMES, *NAMES]]
        starts = [min(r["start_unix_ns"] for r in by_phase[n]) for n in [*DIR_NAMES, *NAMES]]
        assert all(end <= start for end, start in zip(ends, starts[1:], strict=False))
        assert "Directory removal" in (run_dir / "report.md").read_text()


def test_directory_creation_stonewall_wears_out(tmp_path: Path) -> None:
    args = small_args(
        tmp_path,
        "--metadata", "only",
        "--metadata-kind", "dirs",
        "--metadata-items", "1000000",
        "--set", "metadata.stonewall_s=0.3",
    )  # fmt: skip
    done = benchfs_run(args)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    assert [row["phase"] for row in metadata_rows(summary(run_dir))] == with_tree(DIR_NAMES)
    rows = item_rows(summary(run_dir))
    assert rows[0]["stonewalled"] and rows[0]["stonewall_s"] == 0.3
    assert 0 < rows[0]["stonewall_items_min"] <= rows[0]["stonewall_items_max"] < 1_000_000
    ranks = read_json_lines(run_dir / "workload" / "ranks.jsonl")
    most = rows[0]["stonewall_items_max"]
    for name in DIR_NAMES:
        assert {r["ops"] for r in ranks if r["phase"] == name} == {most}, name


def test_a_bad_kind_is_refused_naming_the_key(tmp_path: Path) -> None:
    done = benchfs_run(small_args(tmp_path, "--metadata", "only", "--metadata-kind", "folders"))
    assert done.returncode != 0
    assert "metadata.kind" in done.stderr and "'files', 'dirs' or 'both'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "results").exists() or not run_dirs(tmp_path / "results")
