"""mdtest's rate arithmetic on known timings, the metadata phase rows of the
summary, and the `[metadata]` config section's checks."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from analysis.phases import MetadataPhase
from benchfs.config import apply_overrides, load_config, parse_config
from benchfs.errors import ConfigError
from benchfs.workload.metadata_spec import MetadataWorkload
from benchfs.workload.metadata_summary import summarize_metadata
from benchfs.workload.summary import RankRow

PHASES = ["create", "stat", "read", "remove"]
S = 1_000_000_000
T0 = 1_700_000_000 * S
WORKLOAD = MetadataWorkload(
    items=100,
    phases=["create", "stat"],
    unique_dir=False,
    write_bytes=10,
    read_bytes=0,
    stonewall_s=2.0,
    repetitions=2,
    prefix="mdtest",
)


def row(
    phase: str, repetition: int, rank: int, start_s: float, end_s: float, **kw: object
) -> RankRow:
    values: dict[str, object] = dict(
        repetition=repetition, phase=phase, rank=rank, host=f"h{rank}", bytes=0, ops=100,
        start_unix_ns=T0 + int(start_s * S), end_unix_ns=T0 + int(end_s * S),
    )  # fmt: skip
    values.update(kw)
    return RankRow.model_validate(values)


def test_rates_are_all_items_over_the_slowest_rank_then_statistics_over_repetitions() -> None:
    rows = [
        # Repetition 0: 200 items in 2 s (the slowest rank); repetition 1: in 4 s.
        row("File creation", 0, 0, 0, 1, stonewalled=True, stonewall_ops=80),
        row("File creation", 0, 1, 0, 2, stonewalled=True, stonewall_ops=100),
        row("File creation", 1, 0, 10, 14),
        row("File creation", 1, 1, 10, 12),
        row("File stat", 0, 0, 3, 4),
        row("File stat", 0, 1, 3, 4),
        row("File stat", 1, 0, 15, 16),
        row("File stat", 1, 1, 15, 16),
        row("write", 0, 0, 0, 1),  # a data phase: not a metadata row
    ]
    latencies = {("File creation", 0): np.arange(1, 201, dtype=np.uint64) * 1000}
    phases, repetitions = summarize_metadata(rows, WORKLOAD, latencies)
    assert [p["phase"] for p in phases] == ["File creation", "File stat"]
    create = MetadataPhase.from_row(phases[0])
    assert (create.rate_max_ops_s, create.rate_min_ops_s) == (100.0, 50.0)
    assert create.rate_mean_ops_s == 75.0
    assert create.rate_stddev_ops_s == pytest.approx(statistics.stdev([100.0, 50.0]))
    assert (create.time_max_s, create.time_min_s, create.time_mean_s) == (4.0, 2.0, 3.0)
    assert create.rank_rate_max_ops_s == 100.0 and create.rank_rate_min_ops_s == 25.0
    assert (create.tasks, create.repetitions, create.items, create.items_per_rank) == (
        2, 2, 200.0, 100,
    )  # fmt: skip
    assert create.access == "shared-dir" and create.tool == "benchfs"
    assert create.stonewalled and (create.stonewall_items_min, create.stonewall_items_max) == (
        80, 100,
    )  # fmt: skip
    assert create.latency is not None and create.latency.ops == 200
    assert create.latency.p50_us == 100.0 and create.latency.max_us == 200.0
    stat = MetadataPhase.from_row(phases[1])
    assert stat.rate_stddev_ops_s == 0.0 and stat.rate_mean_ops_s == 200.0
    assert not stat.stonewalled and stat.stonewall_items_max is None and stat.latency is None
    assert [(r["phase"], r["repetition"], r["rate_ops_s"]) for r in repetitions] == [
        ("File creation", 0, 100.0), ("File creation", 1, 50.0),
        ("File stat", 0, 200.0), ("File stat", 1, 200.0),
    ]  # fmt: skip
    assert repetitions[0]["p50_us"] == 100.0 and repetitions[1]["p50_us"] is None


def test_the_metadata_section_checks_name_the_key() -> None:
    base = load_config(None)
    assert base.base.metadata.mode == "off"
    cases = {
        "metadata.items": ("0", "metadata.items"),
        "metadata.phases": ("stat,create", "mdtest's order"),
        "metadata.mode": ("sometimes", "metadata.mode"),
        "metadata.write_bytes": ("2g", "metadata.write_bytes"),
    }
    for key, (value, words) in cases.items():
        with pytest.raises(ConfigError, match=words):
            apply_overrides(base, {key: value})
    with pytest.raises(ConfigError, match="read_bytes"):
        apply_overrides(base, {"metadata.read_bytes": "4k"})
    with pytest.raises(ConfigError, match="start with 'create'"):
        apply_overrides(base, {"metadata.phases": "stat,remove"})
    plan = parse_config('[metadata]\nunique_dir = [true, false]\nwrite_bytes = "4k"\n', "md.toml")
    assert [axis.key for axis in plan.axes] == ["metadata.unique_dir"]
    assert plan.base.metadata.write_bytes == 4096
    swept = apply_overrides(base, {"metadata.items": "10,20", "metadata.mode": "only"})
    assert swept.axes[0].values == ("10", "20")
    assert base.base.metadata.kind == "files"
    with pytest.raises(ConfigError, match=r"metadata\.kind.*'files', 'dirs' or 'both'"):
        apply_overrides(base, {"metadata.kind": "folders"})
    # Directories hold no bytes: reading more than was written concerns files only.
    dirs = apply_overrides(base, {"metadata.kind": "dirs", "metadata.read_bytes": "4k"})
    assert dirs.base.metadata.kind == "dirs"
    plan = parse_config('[metadata]\nkind = ["files", "dirs", "both"]\n', "md.toml")
    assert [axis.key for axis in plan.axes] == ["metadata.kind"]


def test_directory_phases_come_first_and_hold_no_bytes() -> None:
    workload = MetadataWorkload(**{**WORKLOAD.model_dump(), "phases": PHASES, "kind": "both"})
    assert workload.phase_names() == [
        "Tree creation", "Directory creation", "Directory stat", "Directory removal",
        "File creation", "File stat", "File read", "File removal", "Tree removal",
    ]  # fmt: skip
    assert workload.arguments("create", 1, 2, "dir")["kind"] == "dir"
    only_dirs = MetadataWorkload(**{**workload.model_dump(), "kind": "dirs"})
    assert only_dirs.phase_names() == [
        "Tree creation", "Directory creation", "Directory stat", "Directory removal",
        "Tree removal",
    ]  # fmt: skip
    # Rows arrive in any order; the summary keeps mdtest's.
    rows = [
        row(name, 0, rank, 0, 1) for name in reversed(workload.phase_names()) for rank in range(2)
    ]
    phases, _ = summarize_metadata(rows, workload)
    assert [p["phase"] for p in phases] == workload.phase_names()
    by_name = {p["phase"]: MetadataPhase.from_row(p) for p in phases}
    directory, file = by_name["Directory creation"], by_name["File creation"]
    # A shared tree is one tree: its rows count one tree's directories.
    tree = by_name["Tree creation"]
    assert (tree.object, tree.items, tree.items_per_rank, tree.write_bytes) == (
        "tree",
        100.0,
        1,
        None,
    )
    assert (directory.object, directory.operation) == ("directory", "create")
    assert (directory.write_bytes, directory.read_bytes) == (None, None)
    assert (directory.items, directory.rate_mean_ops_s) == (200.0, 200.0)
    assert (file.object, file.write_bytes) == ("file", 10)


def test_a_neighbour_stride_moves_every_phase_but_create_to_the_next_rank() -> None:
    """mdtest -N 1 (the IO500 suite): rank 3 of 4 stats, reads and removes rank 0's files."""
    from benchfs.config.suite import SuiteConfig
    from benchfs.workload.io500_rank import suite_workloads

    own = MetadataWorkload(items=5, phases=["create", "stat"], unique_dir=True,
                           write_bytes=0, read_bytes=0, stonewall_s=0.0, repetitions=1,
                           prefix="md")  # fmt: skip
    assert own.arguments("stat", 3, 4)["rank"] == 3
    strided = MetadataWorkload.model_validate({**own.model_dump(), "neighbour_stride": 1})
    assert [strided.arguments(p, 3, 4)["rank"] for p in ("create", "stat", "read", "remove")] == [
        3, 0, 0, 0,
    ]  # fmt: skip
    assert strided.arguments("stat", 1, 4)["rank"] == 2
    workloads = suite_workloads(SuiteConfig(name="io500-quick").sizes())
    assert {w.neighbour_stride for w in workloads.values()} == {1}
