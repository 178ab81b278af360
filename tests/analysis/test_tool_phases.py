"""Tool outputs as the phase rows of workload/summary.json (docs/RUN.md)."""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import pytest
from tool_outputs_support import output

from analysis.convert.fio import fio_phases
from analysis.convert.ior import ior_phases
from analysis.convert.mdtest import mdtest_phases, rank_detail_phases
from analysis.loaders.fio import parse_fio_json
from analysis.loaders.ior import load_ior_json
from analysis.loaders.ior_csv import load_ior_csv
from analysis.loaders.ior_text import load_ior_text
from analysis.loaders.mdtest import load_mdtest_text
from analysis.loaders.mdtest_csv import load_per_op, load_rank_details
from analysis.phases import PROVENANCE_FIELDS, MetadataPhase, latency_figures


def _by_phase(rows: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    return {str(row["phase"]): row for row in rows}


def test_ior_json_phases_keep_iors_names_and_say_where_they_came_from() -> None:
    converted = ior_phases(load_ior_json(output("ior_fpp_t256k_b8m_i2.json")))
    rows = _by_phase(converted.phases)
    assert list(rows) == ["write", "read"]
    write = rows["write"]
    assert {key: write[key] for key in PROVENANCE_FIELDS} == {
        "kind": "data",
        "tool": "ior",
        "tool_version": "4.1.0+dev",
        "queue_depth": 1,
        "access": "file-per-process",
        "ordering": "sequential",
    }
    assert write["bwMeanMIB"] == 1197.3643 and write["OPsSD"] == 111.4145
    assert write["stonewalled"] is False and write["operation"] == "write"
    repetitions = converted.repetitions
    assert [(r["phase"], r["repetition"]) for r in repetitions] == [
        ("write", 0),
        ("read", 0),
        ("write", 1),
        ("read", 1),
    ]
    assert repetitions[2]["bwMiB"] == 1225.2180 and repetitions[0]["tool"] == "ior"


def test_ior_shared_file_stonewall_and_csv() -> None:
    shared = _by_phase(
        ior_phases(load_ior_json(output("ior_shared_t4k_b4m_s2_json_on_stdout.stdout"))).phases
    )
    assert shared["read"]["access"] == "single-shared-file"
    walled = _by_phase(ior_phases(load_ior_text(output("local/ior_stonewall.txt"))).phases)
    assert walled["write"]["stonewalled"] is True and walled["write"]["StoneWallTime"] == 1.0
    csv = _by_phase(
        ior_phases(load_ior_csv(output("local/ior_fpp_t256k_b8m_i2_csv.stdout"))).phases
    )
    # IOR's CSV names neither the backend nor the layout: not known, not guessed
    assert csv["write"]["queue_depth"] is None and csv["write"]["access"] is None
    assert csv["write"]["tool"] == "ior" and csv["write"]["bwMaxMIB"] == 1049.8719


def test_ior_tests_of_one_run_are_named_apart() -> None:
    converted = ior_phases(load_ior_text(output("local/ior_script_two_tests.txt")))
    rows = _by_phase(converted.phases)
    assert list(rows) == ["write (test 0)", "read (test 0)", "write (test 1)", "read (test 1)"]
    assert rows["write (test 0)"]["access"] == "single-shared-file"
    assert rows["write (test 1)"]["access"] == "file-per-process"
    assert rows["write (test 1)"]["transferSize"] == 262144
    assert [(r["phase"], r["bwMiB"]) for r in converted.repetitions][2] == ("write (test 1)", 8564)


def test_mdtest_phases_rates_items_and_access() -> None:
    phases = mdtest_phases(load_mdtest_text(output("mdtest_n500_F_u.txt")))
    assert [p.phase for p in phases] == [
        "File creation",
        "File stat",
        "File read",
        "File removal",
        "Tree creation",
        "Tree removal",
    ]
    create = phases[0]
    assert (create.object, create.operation) == ("file", "create")
    assert create.rate_mean_ops_s == 9538.514 and create.rate_stddev_ops_s == 0.0
    assert (create.tasks, create.repetitions, create.items, create.items_per_rank) == (
        2,
        1,
        1000,
        500,
    )
    assert create.access == "unique-dir-per-rank" and create.queue_depth == 1
    assert create.time_mean_s is None and create.latency is None
    assert phases[4].items is None  # tree phases: mdtest does not count them as items
    row = create.to_row()
    assert row["kind"] == "metadata" and row["tool"] == "mdtest" and row["p99.9_us"] is None


def test_mdtest_time_block_rank_statistics_and_dirs_only() -> None:
    timed = {
        p.phase: p for p in mdtest_phases(load_mdtest_text(output("local/mdtest_n200_i2_P.txt")))
    }
    removal = timed["Directory removal"]
    assert (removal.rate_max_ops_s, removal.time_max_s, removal.time_mean_s) == (
        279.947,
        1.716,
        1.572,
    )
    assert removal.access == "shared-dir" and removal.repetitions == 2
    ranked = mdtest_phases(load_mdtest_text(output("local/mdtest_n200_F_i3_rankstats.txt")))
    assert ranked[0].rank_rate_min_ops_s == 1641.661 and ranked[0].rate_min_ops_s == 3030.807
    dirs = mdtest_phases(load_mdtest_text(output("local/mdtest_n200_D_u_i2.txt")))
    assert [p.object for p in dirs] == ["directory"] * 4 + ["tree"] * 2


def test_mdtest_stonewall_counts_what_the_ranks_did() -> None:
    phases = {
        p.phase: p for p in mdtest_phases(load_mdtest_text(output("local/mdtest_n200000_F_W1.txt")))
    }
    create = phases["File creation"]
    assert create.stonewalled and create.stonewall_s == 1.0
    assert (create.stonewall_items_min, create.stonewall_items_max) == (1511, 1690)
    # wear-out: every rank reached the furthest rank's 1690 files, 2 ranks
    assert create.items == 3380 and phases["File removal"].items == 3380
    assert not phases["File stat"].stonewalled


def test_mdtest_phases_that_did_not_run_are_left_out() -> None:
    phases = mdtest_phases(load_mdtest_text(output("local/mdtest_n100_F_C_Z.txt")))
    # -C: create only (the tree is made, not removed); -Z: times only
    assert [p.phase for p in phases] == ["File creation", "Tree creation"]
    assert phases[0].time_max_s == 0.093 and phases[0].rate_max_ops_s is None


def test_mdtest_tests_per_task_count_are_named_apart() -> None:
    phases = mdtest_phases(load_mdtest_text(output("local/mdtest_n100_F_tasks1to2.txt")))
    assert phases[0].phase == "File creation (1 tasks)" and phases[0].tasks == 1
    assert phases[6].phase == "File creation (2 tasks)" and phases[6].items == 200
    assert phases[6].mdtest_name == "File creation" and phases[6].operation == "create"


def test_per_op_latency_nearest_rank_over_all_ranks() -> None:
    report = load_mdtest_text(output("local/mdtest_n100_F_w3901_perop.txt"))
    files = [load_per_op(output(f"local/per op-File stat-0000{rank}.csv")) for rank in (0, 1)]
    phases = {p.phase: p for p in mdtest_phases(report, files)}
    figures = phases["File stat"].latency
    assert figures is not None and figures.ops == 200
    runtimes = sorted(
        float(line.split(",")[1]) * 1e6
        for rank in (0, 1)
        for line in output(f"local/per op-File stat-0000{rank}.csv").read_text().splitlines()[1:]
    )
    assert figures.p50_us == pytest.approx(runtimes[99])  # nearest rank: 100th of 200
    assert figures.p99_us == pytest.approx(runtimes[197]) and figures.max_us == runtimes[-1]
    assert phases["File creation"].latency is None  # its files were not given
    assert phases["File creation"].write_bytes == 3901 and phases["File read"].read_bytes == 3901


def test_rank_details_alone_give_the_first_repetition() -> None:
    phases = rank_detail_phases(load_rank_details(output("mdtest_n200_F_rankdetails.csv")))
    create = phases[0]
    assert create.phase == "File creation" and create.tasks == 2 and create.items == 400
    assert create.rate_mean_ops_s == pytest.approx(1943.8232241)
    assert create.time_max_s == pytest.approx(0.2057800293)


def test_metadata_row_round_trip_and_validation() -> None:
    phase = mdtest_phases(load_mdtest_text(output("local/mdtest_n200_i2_P.txt")))[0]
    assert MetadataPhase.from_row(phase.to_row()) == phase
    with pytest.raises(ValueError, match="'File open' is not one of mdtest's"):
        MetadataPhase(phase="File open", tool="mdtest")
    with pytest.raises(ValueError, match="tool 'mdtest2' is not one of"):
        MetadataPhase(phase="File stat", tool="mdtest2")
    with pytest.raises(ValueError, match="kind is 'data', not metadata"):
        MetadataPhase.from_row({"phase": "write", "kind": "data"})


def test_latency_figures_match_the_data_phases() -> None:
    figures = latency_figures([float(value) for value in range(1, 1001)])
    assert figures is not None
    assert (figures.p50_us, figures.p90_us, figures.p99_us, figures.p999_us) == (500, 900, 990, 999)
    assert figures.mean_us == 500.5 and latency_figures([]) is None


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_fio_phases_from_a_real_run(tmp_path: Path) -> None:
    def fio(*options: str) -> str:
        done = subprocess.run(
            [
                "fio",
                f"--directory={tmp_path}",
                "--size=4m",
                "--bs=64k",
                "--ioengine=psync",
                "--output-format=json",
                *options,
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        return done.stdout

    single = fio_phases(parse_fio_json(fio("--name=seq", "--rw=write"), "one.json"))
    (write,) = single
    assert write["phase"] == "write" and write["tool"] == "fio" and write["kind"] == "data"
    assert write["queue_depth"] == 1 and write["ordering"] == "sequential"
    assert write["xsizeMiB"] == 4.0 and write["transferSize"] == 65536 and write["numTasks"] == 1
    assert write["bwMeanMIB"] == pytest.approx(4.0 / write["MeanTime"], rel=0.01)
    assert write["p50_us"] is not None and write["latency_ops"] == 64
    two = fio_phases(
        parse_fio_json(
            fio("--name=rand", "--rw=randread", "--numjobs=2", "--iodepth=8"), "two.json"
        )
    )
    (read,) = two
    assert read["numTasks"] == 2 and read["xsizeMiB"] == 8.0 and read["ordering"] == "random"
    assert read["queue_depth"] == 1  # psync ignores iodepth
    assert read["p50_us"] is None  # two jobs' percentiles do not merge
    assert not math.isnan(read["OPsMean"])
