"""mdtest's text output in every shape it prints, and its CSV files."""

from __future__ import annotations

from pathlib import Path

import pytest
from tool_outputs_support import output

from analysis.errors import DataFormatError
from analysis.loaders.mdtest import load_mdtest_text, parse_mdtest_arguments
from analysis.loaders.mdtest_csv import load_per_op, load_rank_details, parse_per_op


def test_plain_files_only_unique_dir() -> None:
    report = load_mdtest_text(output("mdtest_n500_F_u.txt"))
    assert report.version == "4.1.0+dev" and (report.launched_tasks, report.nodes) == (2, 1)
    assert report.arguments == {"n": "500", "F": 1, "u": 1, "d": "/scratch/job/c"}
    assert report.started == "11/23/2026 19:32:57" and report.finished == "11/23/2026 19:32:58"
    assert report.warnings == (
        "WARNING: Read bytes is 0, thus, a read test will actually just open/close",
    )
    (test,) = report.tests
    assert (test.tasks, test.items, test.item_kind, test.iterations) == (2, 1000, "files", 1)
    assert test.times is None and test.rates is not None
    rates = test.rates.set_index("phase")
    assert list(rates.index) == [
        "File creation",
        "File stat",
        "File read",
        "File removal",
        "Tree creation",
        "Tree removal",
    ]
    assert rates.loc["File creation", "max"] == 9538.514
    assert rates.loc["Tree removal", "mean"] == 698.352 and rates.loc["File stat", "stddev"] == 0


def test_dirs_and_files_with_repetitions() -> None:
    (test,) = load_mdtest_text(output("mdtest_n300_dirs_and_files_i2.txt")).tests
    assert (test.items, test.item_kind, test.iterations) == (600, "files/directories", 2)
    rates = test.rates.set_index("phase")
    assert "Directory read" not in rates.index  # mdtest never prints it
    assert list(rates.loc["Directory rename", ["max", "min", "mean", "stddev"]]) == [
        53768.533,
        47683.317,
        50725.925,
        4302.898,
    ]


def test_print_rate_and_time() -> None:
    (test,) = load_mdtest_text(output("local/mdtest_n200_i2_P.txt")).tests
    assert test.rates is not None and test.times is not None
    assert len(test.rates) == len(test.times) == 10
    times = test.times.set_index("phase")
    assert list(times.loc["Directory removal", ["max", "min", "mean", "stddev"]]) == [
        1.716,
        1.429,
        1.572,
        0.203,
    ]


def test_rank_statistics_columns() -> None:
    (test,) = load_mdtest_text(output("local/mdtest_n200_F_i3_rankstats.txt")).tests
    rates = test.rates.set_index("phase")
    row = rates.loc["File creation"]
    assert (row["rank_max"], row["rank_min"], row["rank_mean"]) == (8002.259, 1641.661, 3482.136)
    assert (row["max"], row["min"], row["mean"], row["stddev"]) == (
        4902.924,
        3030.807,
        4058.311,
        949.364,
    )
    assert rates.loc["Tree removal", "rank_mean"] == 124.785


def test_dirs_only_and_stonewall() -> None:
    (dirs,) = load_mdtest_text(output("local/mdtest_n200_D_u_i2.txt")).tests
    assert dirs.item_kind == "directories" and len(dirs.rates) == 6
    (walled,) = load_mdtest_text(output("local/mdtest_n200000_F_W1.txt")).tests
    assert walled.stonewall == ((1511, 1690, 1600.5),) and walled.items == 400000


def test_one_test_per_task_count_and_verbose_iterations() -> None:
    tests = load_mdtest_text(output("local/mdtest_n100_F_tasks1to2.txt")).tests
    assert [(t.tasks, t.items) for t in tests] == [(1, 100), (2, 200)]
    verbose = load_mdtest_text(output("local/mdtest_n100_verbose.txt"))
    assert verbose.iterations is not None
    rows = verbose.iterations.set_index("phase")
    assert rows.loc["Directory removal", "time_s"] == 0.391
    assert rows.loc["Tree creation", "rate_ops_s"] == 1254.653
    assert set(rows["iteration"]) == {0}


def test_arguments_as_mdtest_reads_them() -> None:
    argv = ["mdtest", "-n=5", "-F", "-v", "-v", "-w", "3901", "--savePerOpDataCSV=per op", "-Cu"]
    assert parse_mdtest_arguments(argv) == {
        "n": "5",
        "F": 1,
        "v": 2,
        "w": "3901",
        "savePerOpDataCSV": "per op",
        "C": 1,
        "u": 1,
    }


def test_failed_truncated_empty_and_wrong_tool(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match=r"mdtest run failed: ERROR: open64.*at line 13"):
        load_mdtest_text(output("local/mdtest_failed_missing_dir.txt"))
    text = output("mdtest_n300_dirs_and_files_i2.txt").read_text()
    cut = tmp_path / "cut.txt"
    cut.write_text(text[: text.index("   File stat")])
    with pytest.raises(DataFormatError, match=r"cut\.txt: .*5 of 10 phase rows.*at line 18"):
        load_mdtest_text(cut)
    cut.write_text(text[: text.index("SUMMARY rate")])
    with pytest.raises(DataFormatError, match=r"ends before its SUMMARY.*at line 9"):
        load_mdtest_text(cut)
    cut.write_text(text[: text.index("   File stat") + 35])
    with pytest.raises(DataFormatError, match=r"'File stat' has 1 figures.*at line 19"):
        load_mdtest_text(cut)
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(DataFormatError, match=r"empty\.txt: empty file.*at byte 0"):
        load_mdtest_text(empty)
    with pytest.raises(DataFormatError, match=r"not mdtest output.*looks like IOR text output"):
        load_mdtest_text(output("ior_fpp_t256k_b8m_i2.txt"))


def test_rank_details_with_ragged_rows() -> None:
    details = load_rank_details(output("local/mdtest_n100_i2_rankdetails.csv"))
    assert details.items_per_rank == 100
    overall = details.overall.set_index("phase")
    assert overall.loc["Tree removal", "rate_ops_s"] == pytest.approx(477.54799044)
    ranks = details.ranks
    # 2 repetitions x 2 ranks, 9 phases each (the rank rows stop before the tree phases)
    assert sorted(set(zip(ranks["repetition"], ranks["rank"], strict=True))) == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
    ]
    assert len(ranks) == 36 and "Tree creation" not in set(ranks["phase"])
    one = ranks[(ranks["repetition"] == 1) & (ranks["rank"] == 1)].set_index("phase")
    assert one.loc["File removal", "time_s"] == pytest.approx(8.4939002991e-03)


def test_rank_details_files_only_leave_empty_phases_out() -> None:
    details = load_rank_details(output("mdtest_n200_F_rankdetails.csv"))
    assert set(details.overall["phase"]) == {
        "File creation",
        "File stat",
        "File read",
        "File removal",
        "Tree creation",
        "Tree removal",
    }
    assert len(details.ranks) == 8 and set(details.ranks["repetition"]) == {0}


def test_per_op_files_with_spaces_in_their_names(tmp_path: Path) -> None:
    times = load_per_op(output("local/per op-File stat-00001.csv"))
    assert (times.prefix, times.phase, times.rank) == ("per op", "File stat", 1)
    assert len(times.times) == 100
    assert times.times["runtime_s"].iloc[0] == pytest.approx(1.09672546e-05)
    text = output("local/per op-File stat-00001.csv").read_text()
    with pytest.raises(DataFormatError, match=r"keep mdtest's name PREFIX-<phase>-<rank>\.csv"):
        parse_per_op(text, "renamed.csv", "renamed.csv")
    with pytest.raises(DataFormatError, match=r"x\.csv: not a 'time,runtime,tp' row.*at line 3"):
        parse_per_op(
            text.splitlines()[0] + "\n1e-5,2e-6,3e5\n1.5e-05,2", "a-File stat-00000.csv", "x.csv"
        )
