"""Every real IOR and mdtest output in data/tool-outputs is recognized and read.

The folder holds unedited outputs of IOR and mdtest 4.1.0+dev (its READMEs
give the commands); a file that is no tool's output is not recognized, and
the outputs of failed runs give an error naming the file and the line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tool_outputs_support import TOOL_OUTPUTS, all_files

from analysis.errors import DataFormatError
from analysis.loaders.detect import ToolOutput, detect
from analysis.loaders.tools import load_tool_output

IOR_JSON, IOR_TEXT, IOR_CSV = ToolOutput.IOR_JSON, ToolOutput.IOR_TEXT, ToolOutput.IOR_CSV
MD_TEXT, MD_RANKS = ToolOutput.MDTEST_TEXT, ToolOutput.MDTEST_RANK_DETAILS
MD_OPS = ToolOutput.MDTEST_PER_OP

# file -> (family by content, number of summary rows; None where the run failed)
EXPECTED: dict[str, tuple[ToolOutput | None, int | None]] = {
    "ior_fpp_t256k_b8m_i2.json": (IOR_JSON, 2),
    "ior_fpp_t256k_b8m_i2.json.stdout": (None, None),  # "Writing output to ...": no results
    "ior_fpp_t256k_b8m_i2.txt": (IOR_TEXT, 2),
    "ior_shared_t4k_b4m_s2_json_on_stdout.stdout": (IOR_JSON, 2),
    "mdtest_n200_F_rankdetails.csv": (MD_RANKS, 6),
    "mdtest_n200_F_rankdetails.stdout": (MD_TEXT, 6),
    "mdtest_n300_dirs_and_files_i2.txt": (MD_TEXT, 10),
    "mdtest_n500_F_u.txt": (MD_TEXT, 6),
    "local/ior_failed_json_on_stdout.stdout": (IOR_JSON, None),
    "local/ior_failed_missing_dir.txt": (IOR_TEXT, None),
    "local/ior_fpp_t256k_b8m_i2_csv.stdout": (IOR_CSV, 2),
    "local/ior_fpp_verbose.txt": (IOR_TEXT, 2),
    "local/ior_shared_stonewall_csv.stdout": (IOR_CSV, 2),
    "local/ior_script_two_tests.txt": (IOR_TEXT, 4),
    "local/ior_stonewall.txt": (IOR_TEXT, 2),
    "local/ior_stonewall_json_on_stdout.stdout": (IOR_JSON, 2),
    "local/mdtest_failed_missing_dir.txt": (MD_TEXT, None),
    "local/mdtest_n100_F_C_Z.txt": (MD_TEXT, 6),
    "local/mdtest_n100_F_tasks1to2.txt": (MD_TEXT, 12),
    "local/mdtest_n100_F_w3901_perop.txt": (MD_TEXT, 6),
    "local/mdtest_n100_i2_P_rankstats_rankdetails.txt": (MD_TEXT, 10),
    "local/mdtest_n100_i2_rankdetails.csv": (MD_RANKS, 11),
    "local/mdtest_n100_verbose.txt": (MD_TEXT, 10),
    "local/mdtest_n200000_F_W1.txt": (MD_TEXT, 6),
    "local/mdtest_n200_D_u_i2.txt": (MD_TEXT, 6),
    "local/mdtest_n200_F_i3_rankstats.txt": (MD_TEXT, 6),
    "local/mdtest_n200_i2_P.txt": (MD_TEXT, 10),
    **{
        f"local/per op-File {phase}-0000{rank}.csv": (MD_OPS, 100)
        for phase in ("creation", "stat", "read", "removal")
        for rank in (0, 1)
    },
}


def _name(path: Path) -> str:
    return str(path.relative_to(TOOL_OUTPUTS))


def test_every_file_has_an_expectation() -> None:
    assert sorted(_name(path) for path in all_files()) == sorted(EXPECTED)


@pytest.mark.parametrize("path", all_files(), ids=_name)
def test_detected_and_read(path: Path) -> None:
    kind, rows = EXPECTED[_name(path)]
    assert detect(path.read_text()) is kind
    if kind is None:
        with pytest.raises(DataFormatError, match="not an output of IOR, mdtest or fio"):
            load_tool_output(path)
        return
    if rows is None:
        with pytest.raises(DataFormatError, match=r"run failed: ERROR: open64\(") as caught:
            load_tool_output(path)
        assert caught.value.path == path
        assert str(caught.value.position).startswith("line ")
        return
    report = load_tool_output(path).report
    assert _summary_rows(report) == rows


def _summary_rows(report: object) -> int:
    for name in ("summary", "overall", "times"):
        frame = getattr(report, name, None)
        if frame is not None and not callable(frame):
            return len(frame)
    tests = getattr(report, "tests")  # noqa: B009 - an mdtest report
    return sum(len(test.rates if test.rates is not None else test.times) for test in tests)
