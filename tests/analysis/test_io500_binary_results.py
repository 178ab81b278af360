"""The reference io500 binary's results read into a suite's summary: every
phase line with its figure, time and verdict, the score line, the reasons
of result.txt, on real output (data/io500/README.md), and bad input named."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from analysis.convert.io500_binary import binary_suite_document
from analysis.errors import DataFormatError
from analysis.io500 import PHASE_NAMES, score
from analysis.loaders.io500 import load_io500_results, parse_io500_summary

DATA = Path(__file__).parent / "data" / "io500"
# The binary's own figures, as result_summary.txt prints them.
FIGURES = {
    "ior-easy-write": 0.797408, "mdtest-easy-write": 3.220713, "ior-hard-write": 0.203890,
    "mdtest-hard-write": 2.242278, "find": 3185.611740, "ior-easy-read": 0.907355,
    "mdtest-easy-stat": 159.069559, "ior-hard-read": 0.812336, "mdtest-hard-stat": 221.361586,
    "mdtest-easy-delete": 35.053864, "mdtest-hard-read": 16.210356,
    "mdtest-hard-delete": 0.581611,
}  # fmt: skip
INVALID = {"ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write"}


def test_every_phase_line_and_the_score_line_are_read() -> None:
    result, log = load_io500_results(DATA)
    assert (result.version, result.mode) == ("io500-isc26_v2-26-g02091cf254d8", "standard")
    scored = {line.name: line for line in result.phases if line.scored}
    assert list(scored) == list(PHASE_NAMES)
    assert {name: line.value for name, line in scored.items()} == FIGURES
    assert {name for name, line in scored.items() if not line.valid} == INVALID
    assert scored["mdtest-hard-delete"].time_s == 7.921
    assert [(line.name, line.scored) for line in result.phases if not line.scored] == [
        ("timestamp", False), ("ior-rnd4K-easy-read", False)
    ]  # fmt: skip
    assert (result.bandwidth, result.metadata, result.score) == (0.588366, 26.820115, 3.972410)
    assert result.valid is False
    assert log.reasons["run"] == ("stonewall-time 2s != 300s",)
    assert log.pairs["find"]["found"] == "58" and log.pairs["find"]["total-files"] == "11677"


def test_the_score_recomputed_from_the_binarys_phases_is_the_binarys() -> None:
    result, _ = load_io500_results(DATA)
    again = score({line.name: line.value for line in result.phases if line.scored})
    assert again.bandwidth == pytest.approx(result.bandwidth, abs=1e-6)
    assert again.metadata == pytest.approx(result.metadata, abs=1e-5)
    assert again.score == pytest.approx(result.score, abs=1e-5)


def test_the_summary_has_the_suites_rows_and_the_binarys_verdicts() -> None:
    result, log = load_io500_results(DATA)
    suite = {"name": "io500-quick", "tasks": 2, "stonewall_s": 2.0}
    document = binary_suite_document(result, log, suite)
    rows = {row["phase"]: row for row in document["phases"]}
    assert list(rows) == list(PHASE_NAMES)
    for phase, row in rows.items():
        assert row["io500_rate"] == FIGURES[phase]
        if phase.startswith("ior-"):
            assert row["kind"] == "data" and row["bwMeanMIB"] / 1024 == pytest.approx(
                FIGURES[phase]
            )
            assert row["io500_unit"] == "GiB/s" and row["numTasks"] == 2
        else:
            assert row["kind"] == "metadata" and row["io500_unit"] == "kIOPS"
            assert row["rate_mean_ops_s"] / 1000 == pytest.approx(FIGURES[phase])
        assert row["valid"] is (phase not in INVALID)
    assert rows["ior-hard-write"]["invalid_reasons"] == [
        "Write phase needed 0.858886s instead of stonewall 2s. Stonewall was hit at 0.7s",
        "Runtime of phase (0.889258) is below stonewall time. This shouldn't happen!",
        "Runtime is smaller than expected minimum runtime",
    ]
    # The writes that ran as long as the 2 s stonewall: the mdtest ones.
    assert [p for p, row in rows.items() if row["stonewalled"]] == [
        "mdtest-easy-write", "mdtest-hard-write"
    ]  # fmt: skip
    assert rows["find"]["tool"] == "io500" and rows["find"]["found"] == 58
    assert rows["find"]["items"] == 11677
    assert rows["mdtest-easy-stat"]["command"].startswith("./mdtest --dataPacketType=timestamp")
    assert (document["score"], document["valid"]) == (3.972410, False)
    assert document["invalid_reasons"][0] == "stonewall-time 2s != 300s"
    assert (
        "mdtest-hard-write: Runtime is smaller than expected minimum runtime"
        in (document["invalid_reasons"])
    )
    assert [row["phase"] for row in document["unscored"]] == ["timestamp", "ior-rnd4K-easy-read"]
    assert math.isclose(document["bandwidth"], 0.588366)


def test_the_binarys_stdout_reads_as_its_summary() -> None:
    from_stdout = parse_io500_summary((DATA / "stdout.txt").read_text(), "stdout.txt")
    result, _ = load_io500_results(DATA)
    assert from_stdout.phases == result.phases and from_stdout.score == result.score


def test_a_binary_built_without_its_version_is_read_with_the_version_unknown() -> None:
    """Built outside a git checkout, the binary prints ``IO500 version  (mode)``."""
    text = (DATA / "result_summary.txt").read_text()
    first, rest = text.split("\n", 1)
    result = parse_io500_summary(f"IO500 version  (standard)\n{rest}", "result_summary.txt")
    assert (result.version, result.mode) == ("unknown", "standard")
    assert result.score == load_io500_results(DATA)[0].score
    assert first.startswith("IO500 version io500-")


def test_a_run_that_did_not_finish_is_named(tmp_path: Path) -> None:
    lines = (DATA / "result_summary.txt").read_text().splitlines()
    (tmp_path / "result_summary.txt").write_text("\n".join(lines[:6]) + "\n")
    with pytest.raises(DataFormatError, match=r"result_summary.txt: io500 output ends before"):
        load_io500_results(tmp_path)
    with pytest.raises(DataFormatError, match=r"no io500 result summary"):
        load_io500_results(tmp_path / "absent")
    (tmp_path / "result_summary.txt").write_text(lines[-1] + "\n")
    with pytest.raises(DataFormatError, match=r"no 'IO500 version' line"):
        load_io500_results(tmp_path)
