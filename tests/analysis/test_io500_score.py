"""The IO500 score as the reference implementation computes it
(github.com/IO500/io500, src/main.c calc_score): geometric means of the
bandwidth and the metadata phases, the score the square root of their
product; phases not above 0 left out. And the result's validity by the
reference's rules (src/main.c, phase_ior.c, phase_find.c, phase_dbg.c)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from analysis.io500 import (
    PHASE_NAMES,
    phase_figure,
    score,
    score_of_rows,
    validity,
    with_validity,
)
from analysis.loaders.run import load_suite_score

# The example output in the reference implementation's README (IO500/io500 at
# commit 02091cf, "Example output on the command line": `mpiexec -np 2
# ./io500 config-minimal.ini`), every [RESULT] line and its [SCORE] line:
# "Bandwidth 0.172092 GB/s : IOPS 292.625029 kiops : TOTAL 7.096374".
README_EXAMPLE = {
    "ior-easy-write": 0.186620,
    "mdtest-easy-write": 103.300821,
    "ior-hard-write": 0.001313,
    "mdtest-hard-write": 58.939081,
    "find": 1486.435084,
    "ior-easy-read": 1.575557,
    "mdtest-easy-stat": 839.392805,
    "ior-hard-read": 2.272671,
    "mdtest-hard-stat": 1212.558124,
    "mdtest-easy-delete": 160.765642,
    "mdtest-hard-read": 275.011939,
    "mdtest-hard-delete": 132.015851,
}


# Published IO500 list entries, from the IO500 project's own repository of
# submissions (github.com/IO500/submission-data): each entry's
# result_summary.txt, its 12 [RESULT] lines (figure, seconds) and its
# [SCORE ] line (bandwidth GiB/s, IOPS kIOPS, TOTAL). Both ran with
# stonewall-time = 300 and print no [INVALID].
# Aurora, DAOS, SC23 list (#1 of the production list):
# "Argonne National Laboratory/Aurora/DAOS/2023/submission-688/results/
# 2023.11.07-03.43.32/result_summary.txt" at commit b6210e41.
AURORA_SC23 = {
    "ior-easy-write": (20693.627959, 325.137),
    "mdtest-easy-write": (60985.132190, 731.515),
    "ior-hard-write": (4216.340094, 320.407),
    "mdtest-hard-write": (33827.190274, 431.680),
    "find": (229672.102323, 340.778),
    "ior-easy-read": (12122.872205, 551.709),
    "mdtest-easy-stat": (225295.354188, 200.714),
    "ior-hard-read": (9706.548821, 142.325),
    "mdtest-hard-stat": (230086.031462, 67.136),
    "mdtest-easy-delete": (57648.437192, 770.990),
    "mdtest-hard-read": (141467.158093, 105.995),
    "mdtest-hard-delete": (62196.784662, 235.532),
}
AURORA_SC23_SCORE = (10066.086553, 102785.408581, 32165.926368)
# Helios, Lustre, ISC24 list: "ACC Cyfronet AGH/Helios/Lustre/2024/
# submission-708/results/2024.05.03-09.25.44/result_summary.txt" at commit 3e52f66d.
HELIOS_ISC24 = {
    "ior-easy-write": (352.803032, 386.698),
    "mdtest-easy-write": (119.113150, 373.799),
    "ior-hard-write": (5.996531, 324.188),
    "mdtest-hard-write": (66.621419, 374.882),
    "find": (2872.215129, 24.132),
    "ior-easy-read": (464.646333, 293.619),
    "mdtest-easy-stat": (415.688686, 107.918),
    "ior-hard-read": (227.682852, 8.760),
    "mdtest-hard-stat": (305.227639, 82.610),
    "mdtest-easy-delete": (96.720801, 459.993),
    "mdtest-hard-read": (114.129044, 219.393),
    "mdtest-hard-delete": (58.712616, 425.723),
}
HELIOS_ISC24_SCORE = (122.312630, 192.355126, 153.386640)
LIST_ENTRIES = {"aurora-sc23": (AURORA_SC23, AURORA_SC23_SCORE),
                "helios-isc24": (HELIOS_ISC24, HELIOS_ISC24_SCORE)}  # fmt: skip


def summary_rows(phases: dict[str, tuple[float, float]]) -> list[dict[str, Any]]:
    """Summary phase rows of IO500 figures and times (GiB/s as MiB/s, kIOPS as ops/s)."""
    rows: list[dict[str, Any]] = []
    for phase, (figure, seconds) in phases.items():
        if phase.startswith("ior-"):
            rows.append({"phase": phase, "kind": "data", "bwMeanMIB": figure * 1024,
                         "MeanTime": seconds})  # fmt: skip
        else:
            rows.append({"phase": phase, "kind": "metadata",
                         "rate_mean_ops_s": figure * 1000, "time_mean_s": seconds})  # fmt: skip
    return rows


@pytest.mark.parametrize("entry", sorted(LIST_ENTRIES))
def test_the_score_of_published_list_entries_from_their_phases(entry: str) -> None:
    phases, (bandwidth, metadata, total) = LIST_ENTRIES[entry]
    result = score({phase: figure for phase, (figure, _) in phases.items()})
    # Every figure is printed with 6 decimals: the means agree to about 1e-8.
    assert result.bandwidth == pytest.approx(bandwidth, rel=1e-7)
    assert result.metadata == pytest.approx(metadata, rel=1e-7)
    assert result.score == pytest.approx(total, rel=1e-7)
    # The same figures as summary rows (GiB/s from MiB/s, kIOPS from ops/s),
    # with their times: a valid result by the reference's rules, as listed.
    rows = summary_rows(phases)
    assert score_of_rows(rows).score == pytest.approx(total, rel=1e-7)
    judged = validity(rows, {"name": "io500", "stonewall_s": 300.0})
    assert judged.valid, judged.reasons


# The reference's own verdicts: its io500 binary (IO500/io500 at 02091cf,
# IOR at 5fcf0ba as its prepare.sh pins, pfind at aaba722), built and run
# here with 2 ranks on a local directory, `mpirun -np 2 io500 quick.ini`
# where quick.ini sets api POSIX, stonewall-time 2, ior-easy transferSize 1m
# and blockSize 128m, ior-hard segmentCount 2000, mdtest-easy n 5000 and
# mdtest-hard n 2000. Its result_summary.txt: (figure, seconds, [INVALID]).
REFERENCE_RUN = {
    "ior-easy-write": (0.797408, 0.334, True),
    "mdtest-easy-write": (3.220713, 3.386, True),
    "ior-hard-write": (0.203890, 0.889, True),
    "mdtest-hard-write": (2.242278, 2.786, True),
    "find": (3185.611740, 0.004, False),
    "ior-easy-read": (0.907355, 0.344, False),
    "mdtest-easy-stat": (159.069559, 1.157, False),
    "ior-hard-read": (0.812336, 0.216, False),
    "mdtest-hard-stat": (221.361586, 1.021, False),
    "mdtest-easy-delete": (35.053864, 1.383, False),
    "mdtest-hard-read": (16.210356, 1.471, False),
    "mdtest-hard-delete": (0.581611, 7.921, False),
}
# "[SCORE ] Bandwidth 0.588366 GiB/s : IOPS 26.820115 kiops : TOTAL 3.972410 [INVALID]"
REFERENCE_RUN_SCORE = (0.588366, 26.820115, 3.972410)


def test_the_reference_binarys_invalid_phases_are_ours() -> None:
    rows = summary_rows({phase: (f, t) for phase, (f, t, _) in REFERENCE_RUN.items()})
    judged = validity(rows, {"name": "io500", "stonewall_s": 2.0})
    marked = {phase for phase, (_, _, invalid) in REFERENCE_RUN.items() if invalid}
    assert set(judged.phase_reasons) == marked
    # Its "ERROR INVALID stonewall-time 2s != 300s", and the [INVALID] score.
    assert judged.run_reasons == ("stonewall 2 s: IO500 requires its stonewall-time of 300 s",)
    assert not judged.valid
    bandwidth, metadata, total = REFERENCE_RUN_SCORE
    result = score_of_rows(rows)
    assert (result.bandwidth, result.metadata, result.score) == pytest.approx(
        (bandwidth, metadata, total), rel=1e-5
    )


def test_the_phases_are_io500s_scored_phases_in_its_order() -> None:
    # src/phase-definitions.h without the optional and unscored phases
    # (find-easy, find-hard, mdworkbench-*, ior-rnd4K-easy-read) and the
    # dummy ones (the timestamp comes after mdtest-easy-write).
    assert PHASE_NAMES == (
        "ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write",
        "find", "ior-easy-read", "mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat",
        "mdtest-easy-delete", "mdtest-hard-read", "mdtest-hard-delete",
    )  # fmt: skip


def test_the_score_of_the_reference_readme_example() -> None:
    result = score(README_EXAMPLE)
    # The printed figures are rounded to 6 decimals (ior-hard-write to 4
    # significant digits), so the means agree to about 1e-4.
    assert result.metadata == pytest.approx(292.625029, rel=1e-6)
    assert result.bandwidth == pytest.approx(0.172092, rel=1e-4)
    assert result.score == pytest.approx(7.096374, rel=1e-4)
    assert result.score == pytest.approx(math.sqrt(result.bandwidth * result.metadata))


def test_a_phase_not_above_zero_is_left_out_and_an_empty_group_counts_zero() -> None:
    figures = {"ior-easy-write": 4.0, "ior-easy-read": 1.0, "ior-hard-write": 0.0,
               "find": 9.0}  # fmt: skip
    result = score(figures)
    assert result.bandwidth == pytest.approx(2.0)  # sqrt(4 x 1): the 0 is not a factor
    assert result.metadata == pytest.approx(9.0)
    assert result.score == pytest.approx(math.sqrt(18.0))
    assert score({"ior-easy-write": 4.0}).score == 0.0


def test_a_name_that_is_not_an_io500_phase_is_refused() -> None:
    with pytest.raises(ValueError, match="not IO500 phases: ior-easy-rnd"):
        score({"ior-easy-rnd": 1.0})


def test_phase_rows_give_gib_per_s_and_kiops() -> None:
    rows = [
        {"phase": "ior-easy-write", "kind": "data", "bwMeanMIB": 2048.0},
        {"phase": "find", "kind": "metadata", "rate_mean_ops_s": 5000.0},
        {"phase": "write", "kind": "data", "bwMeanMIB": 1.0},  # not a suite phase
    ]
    assert phase_figure(rows[0]) == pytest.approx(2.0)
    assert phase_figure(rows[1]) == pytest.approx(5.0)
    assert score_of_rows(rows).score == pytest.approx(math.sqrt(10.0))


def valid_rows(seconds: float = 320.0) -> list[dict[str, Any]]:
    """Every phase with a figure above 0; the write phases ``seconds`` long."""
    rows: list[dict[str, Any]] = []
    for phase in PHASE_NAMES:
        if phase.startswith("ior-"):
            rows.append({"phase": phase, "kind": "data", "bwMeanMIB": 1024.0,
                         "MeanTime": seconds, "errors": 0, "verify_errors": 0})  # fmt: skip
        else:
            rows.append({"phase": phase, "kind": "metadata", "rate_mean_ops_s": 1000.0,
                         "time_mean_s": seconds})  # fmt: skip
    rows[PHASE_NAMES.index("find")]["found"] = 12
    return rows


IO500 = {"name": "io500", "stonewall_s": 300.0}


def test_a_run_by_the_reference_rules_is_valid() -> None:
    result = validity(valid_rows(), IO500)
    assert result.valid and result.reasons == () and result.phase_reasons == {}
    # The read phases need no minimum time; only the stonewalled writes do.
    rows = valid_rows()
    rows[PHASE_NAMES.index("ior-easy-read")]["MeanTime"] = 2.0
    assert validity(rows, IO500).valid


def test_write_phases_below_the_stonewall_or_300_s_are_invalid() -> None:
    rows = valid_rows()
    rows[PHASE_NAMES.index("ior-hard-write")]["MeanTime"] = 250.0
    rows[PHASE_NAMES.index("mdtest-easy-write")]["time_mean_s"] = 299.5
    result = validity(rows, IO500)
    assert not result.valid
    assert set(result.phase_reasons) == {"ior-hard-write", "mdtest-easy-write"}
    assert result.phase_reasons["ior-hard-write"] == (
        "ran 250.000 s, less than its stonewall of 300 s",
        "ran 250.000 s, less than the 300 s a write phase must",
    )
    assert "mdtest-easy-write: ran 299.500 s, less than its stonewall of 300 s" in result.reasons


def test_a_stonewall_other_than_300_s_invalidates_the_run() -> None:
    # The reference's stonewall-time rule (phase_dbg.c), even when every
    # write phase ran long enough.
    result = validity(valid_rows(700.0), {"name": "io500", "stonewall_s": 600.0})
    assert result.run_reasons == ("stonewall 600 s: IO500 requires its stonewall-time of 300 s",)
    short = validity(valid_rows(2.0), {"name": "io500", "stonewall_s": 1.0})
    assert not short.valid and len(short.phase_reasons) == 4  # the four write phases


def test_io500_quick_is_never_valid_and_says_so() -> None:
    result = validity(valid_rows(), {"name": "io500-quick", "stonewall_s": 300.0})
    assert not result.valid
    assert result.run_reasons == (
        "io500-quick is a short test run with small sizes: never a valid IO500 result",
    )


def test_errors_a_zero_result_an_empty_find_or_a_missing_phase_are_invalid() -> None:
    rows = valid_rows()
    rows[PHASE_NAMES.index("ior-easy-read")]["errors"] = 2
    rows[PHASE_NAMES.index("ior-hard-read")]["verify_errors"] = 1
    rows[PHASE_NAMES.index("mdtest-hard-stat")]["rate_mean_ops_s"] = 0.0
    rows[PHASE_NAMES.index("find")]["found"] = 0
    del rows[PHASE_NAMES.index("mdtest-hard-delete")]
    result = validity(rows, IO500)
    assert result.run_reasons == ("phases not run: mdtest-hard-delete",)
    assert result.phase_reasons == {
        "ior-easy-read": ("2 errors during the phase",),
        "ior-hard-read": ("1 verification errors: data read was not what was written",),
        "mdtest-hard-stat": ("its result is 0",),
        "find": ("find found no file matching its criteria",),
    }
    marked, document = with_validity(rows, IO500)
    assert document["valid"] is False and len(document["invalid_reasons"]) == 5
    flags = {row["phase"]: (row["valid"], len(row["invalid_reasons"])) for row in marked}
    assert flags["find"] == (False, 1) and flags["ior-easy-write"] == (True, 0)


def test_a_summary_without_validity_is_judged_from_its_phases(tmp_path: Path) -> None:
    """Summaries written before validity was recorded: report and compare
    still say whether the result is valid, by the same rules."""
    document = {"suite": {"name": "io500", "stonewall_s": 300.0}, "score": 1.0,
                "bandwidth": 1.0, "metadata": 1.0, "phases": valid_rows()}  # fmt: skip
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(document))
    loaded = load_suite_score(path)
    assert loaded is not None and loaded["valid"] is True and loaded["invalid_reasons"] == []
    document["phases"][0]["MeanTime"] = 12.0
    path.write_text(json.dumps(document))
    loaded = load_suite_score(path)
    assert loaded is not None and loaded["valid"] is False
    assert loaded["invalid_reasons"][0].startswith("ior-easy-write: ran 12.000 s")
    # A recorded verdict is taken as written.
    path.write_text(json.dumps({**document, "valid": True, "invalid_reasons": []}))
    assert load_suite_score(path)["valid"] is True  # type: ignore[index]
