"""mdtest's tree phases and its directory rename in the metadata summary:
a tree phase's rate counts one tree's directories (mdtest's count, with a
tree per rank too), a rename the target refuses is a row that says so, the
items spread over the tree as mdtest spreads them, and the `[metadata]`
checks of the tree's shape and the rename name their keys."""

from __future__ import annotations

import pytest

from analysis.phases import MetadataPhase
from benchfs.config import apply_overrides, load_config
from benchfs.errors import ConfigError
from benchfs.workload.metadata_spec import MetadataWorkload
from benchfs.workload.metadata_summary import summarize_metadata
from benchfs.workload.spec import metadata_workload
from benchfs.workload.summary import RankRow

S = 1_000_000_000
T0 = 1_700_000_000 * S
WORKLOAD = MetadataWorkload(
    items=26, phases=["create", "stat", "rename", "remove"], unique_dir=True, write_bytes=0,
    read_bytes=0, stonewall_s=0.0, repetitions=2, prefix="md", kind="dirs", tree_depth=2,
    branch_factor=3,
)  # fmt: skip


def row(phase: str, repetition: int, rank: int, seconds: float, ops: int) -> RankRow:
    start = T0 + repetition * 100 * S
    return RankRow.model_validate(dict(
        repetition=repetition, phase=phase, rank=rank, host="h", bytes=0, ops=ops,
        start_unix_ns=start, end_unix_ns=start + int(seconds * S), elapsed_s=seconds,
    ))  # fmt: skip


def test_tree_rates_count_one_tree_and_rename_runs_on_posix() -> None:
    assert WORKLOAD.tree_dirs() == 13 and WORKLOAD.items_per_dir() == 2
    assert WORKLOAD.phase_names() == [
        "Tree creation", "Directory creation", "Directory stat", "Directory rename",
        "Directory removal", "Tree removal",
    ]  # fmt: skip
    # Two ranks, a tree each, 13 directories in 1 s, then in 2 s.
    rows = [row(name, rep, rank, rep + 1.0, 13) for name in ("Tree creation", "Tree removal")
            for rep in (0, 1) for rank in (0, 1)]  # fmt: skip
    rows += [row("Directory rename", rep, rank, 1.0, 26) for rep in (0, 1) for rank in (0, 1)]
    phases, repetitions = summarize_metadata(rows, WORKLOAD)
    by_name = {p["phase"]: MetadataPhase.from_row(p) for p in phases}
    assert list(by_name) == ["Tree creation", "Directory rename", "Tree removal"]
    tree = by_name["Tree creation"]
    assert (tree.object, tree.operation, tree.items, tree.items_per_rank) == (
        "tree", "create", 13.0, 13,
    )  # fmt: skip
    assert (tree.rate_max_ops_s, tree.rate_min_ops_s, tree.rate_mean_ops_s) == (13.0, 6.5, 9.75)
    assert tree.rank_rate_min_ops_s == 6.5 and tree.unsupported is None
    rename = by_name["Directory rename"]
    assert (rename.object, rename.operation, rename.rate_mean_ops_s) == (
        "directory",
        "rename",
        52.0,
    )
    assert [r["items"] for r in repetitions if r["phase"] == "Tree removal"] == [13, 13]


def test_a_shared_tree_is_rank_zeros_and_a_refused_rename_says_so() -> None:
    workload = MetadataWorkload.model_validate(
        {**WORKLOAD.model_dump(), "unique_dir": False, "dir_rename": False}
    )
    # Rank 0 makes the one tree; the others' calls are empty and no rate.
    assert workload.tree_arguments("create", 0, 2)["items"] == 13
    assert workload.tree_arguments("create", 1, 2)["items"] == 0
    rows = [row("Tree creation", 0, 0, 1.0, 13), row("Tree creation", 0, 1, 0.001, 0)]
    phases, _ = summarize_metadata(rows, workload)
    assert [p["phase"] for p in phases] == ["Tree creation", "Directory rename"]
    tree, rename = (MetadataPhase.from_row(p) for p in phases)
    assert tree.rank_rate_min_ops_s == tree.rank_rate_max_ops_s == 13.0
    assert rename.rate_mean_ops_s is None and rename.latency is None
    assert rename.unsupported is not None and "not supported by the target" in rename.unsupported
    assert phases[1]["unsupported"] == rename.unsupported  # in the written row
    # mdtest renames no lone directory: no phase, no row.
    one = MetadataWorkload.model_validate({**workload.model_dump(), "items": 1, "tree_depth": 0})
    assert "Directory rename" not in one.phase_names()


def test_items_spread_over_the_tree_and_the_checks_name_the_keys() -> None:
    base = load_config(None)
    config = apply_overrides(base, {
        "metadata.mode": "only", "metadata.kind": "both", "metadata.items": "1000",
        "metadata.tree_depth": "2", "metadata.branch_factor": "3",
        "metadata.phases": "create,stat,read,rename,remove",
    }).base  # fmt: skip
    spec = metadata_workload(config)
    assert spec is not None
    # mdtest -n 1000 -z 2 -b 3: 76 in each of the 13 directories, 988 in all.
    assert (spec.items, spec.tree_depth, spec.branch_factor) == (988, 2, 3)
    assert spec.dir_rename is False  # BenchFS refuses a directory's rename
    posix = apply_overrides(base, {"metadata.mode": "only", "workload.target": "posix:/tmp"})
    posix_spec = metadata_workload(posix.base)
    assert posix_spec is not None and posix_spec.dir_rename is True
    cases = {
        "metadata.tree_depth": ("-1", "metadata.tree_depth"),
        "metadata.branch_factor": ("0", "metadata.branch_factor"),
    }
    for key, (value, words) in cases.items():
        with pytest.raises(ConfigError, match=words):
            apply_overrides(base, {key: value})
    with pytest.raises(ConfigError, match=r"13 directories per tree, more than metadata\.items"):
        apply_overrides(base, {"metadata.items": "12", "metadata.tree_depth": "2",
                               "metadata.branch_factor": "3"})  # fmt: skip
    with pytest.raises(ConfigError, match=r"more than 16777216"):
        apply_overrides(base, {"metadata.tree_depth": "30", "metadata.branch_factor": "2"})
    with pytest.raises(ConfigError, match=r"'rename'.*metadata\.kind"):
        apply_overrides(base, {"metadata.phases": "create,rename,remove"})
    with pytest.raises(ConfigError, match="mdtest's order"):
        apply_overrides(base, {"metadata.phases": "create,remove,rename",
                               "metadata.kind": "dirs"})  # fmt: skip


def test_the_console_table_titles_the_items_and_marks_the_refused_rename() -> None:
    from rich.console import Console

    from benchfs.cli.metadata_display import metadata_grid
    from benchfs.cli.tables import print_grid

    workload = MetadataWorkload.model_validate({**WORKLOAD.model_dump(), "dir_rename": False})
    rows = [row(name, 0, rank, 1.0, ops) for name, ops in
            (("Tree creation", 13), ("Directory creation", 26)) for rank in (0, 1)]  # fmt: skip
    phases, _ = summarize_metadata(rows, workload)
    grid = metadata_grid({"phases": phases})
    assert grid is not None
    console = Console(width=200, record=True)
    print_grid(console, grid)
    text = console.export_text()
    # The title counts the items per rank, not the tree's directories.
    assert "26 directories per rank" in text and "2 ranks" in text
    assert "Directory rename (not supported by the target)" in text
