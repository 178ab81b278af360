"""The IOR and mdtest command lines of the IO500 suite, exactly: the
arguments of the reference implementation (github.com/IO500/io500 at
02091cf, src/phase_ior_easy*.c, phase_ior_hard*.c, phase_mdtest_easy*.c,
phase_mdtest_hard*.c), in its order, with IOR's JSON summary added."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchfs.config.suite import SuiteSizes
from benchfs.tools.io500_argv import SuitePlaces, phase_argv, signature, whole_seconds


def sizes(*values: Any) -> SuiteSizes:
    """The suite's sizes in the order of their fields."""
    return SuiteSizes(**dict(zip(SuiteSizes.model_fields, values, strict=True)))


IOR, MDTEST = Path("/opt/ior/bin/ior"), Path("/opt/ior/bin/mdtest")
SIZES = sizes("io500", "ior", 300.0, 2 << 20, 1 << 40, 10_000_000, 1_000_000, 2_000)
PLACES = SuitePlaces(Path("/scratch/d"), Path("/res"), seed=1000)
EASY_G, HARD_G = signature(PLACES, "ior-easy"), signature(PLACES, "ior-hard")
MD_EASY_G, MD_HARD_G = signature(PLACES, "mdtest-easy"), signature(PLACES, "mdtest-hard")


def line(phase: str) -> str:
    return " ".join(phase_argv(phase, IOR, MDTEST, SIZES, PLACES))


IOR_EASY = (
    f"/opt/ior/bin/ior --dataPacketType=timestamp -g -G {EASY_G} -k -e "
    "-o /scratch/d/ior-easy/ior_file_easy -C -Q 1 "
    "-O stoneWallingStatusFile=/res/ior-easy.stonewall -t 2097152 -b 1099511627776 -F"
)
IOR_HARD = (
    f"/opt/ior/bin/ior --dataPacketType=timestamp -C -Q 1 -g -G={HARD_G} -k -e "
    "-o /scratch/d/ior-hard/file -O stoneWallingStatusFile=/res/ior-hard.stonewall "
    "-t 47008 -b 47008 -s 10000000"
)
MD_EASY = (
    f"/opt/ior/bin/mdtest --dataPacketType=timestamp -n 1000000 -u -L -F -P -G {MD_EASY_G} "
    "-N 1 -d /scratch/d/mdtest-easy -x /res/mdtest-easy.stonewall"
)
MD_HARD = (
    f"/opt/ior/bin/mdtest --dataPacketType=timestamp -n 2000 -t -w 3901 -e 3901 -P "
    f"-G={MD_HARD_G} -N 1 -F -d /scratch/d/mdtest-hard -x /res/mdtest-hard.stonewall"
)


def json_summary(phase: str) -> str:
    return f" -O summaryFormat=JSON -O summaryFile=/res/{phase}.json"


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        ("ior-easy-write", IOR_EASY + " -w -D 300 -O stoneWallingWearOut=1 -a POSIX "
         "-O saveRankPerformanceDetailsCSV=/res/ior-easy-write.csv"),
        ("ior-easy-read", IOR_EASY + " -r -R -a POSIX "
         "-O saveRankPerformanceDetailsCSV=/res/ior-easy-read.csv"),
        ("ior-hard-write", IOR_HARD + " -w -D 300 -a POSIX "
         "-O saveRankPerformanceDetailsCSV=/res/ior-hard-write.csv -O stoneWallingWearOut=1"),
        ("ior-hard-read", IOR_HARD + " -r -R -a POSIX "
         "-O saveRankPerformanceDetailsCSV=/res/ior-hard-read.csv"),
    ],
)  # fmt: skip
def test_ior_phases(phase: str, expected: str) -> None:
    assert line(phase) == expected + json_summary(phase)


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        ("mdtest-easy-write", MD_EASY + " -C -Y -W 300"),
        ("mdtest-easy-stat", MD_EASY + " -T"),
        ("mdtest-easy-delete", MD_EASY + " -r"),
        ("mdtest-hard-write", MD_HARD + " -C -Y -W 300"),
        ("mdtest-hard-stat", MD_HARD + " -T"),
        ("mdtest-hard-read", MD_HARD + " -E -X"),
        ("mdtest-hard-delete", MD_HARD + " -r"),
    ],
)
def test_mdtest_phases(phase: str, expected: str) -> None:
    assert line(phase) == f"{expected} --saveRankPerformanceDetails=/res/{phase}.csv -a POSIX"


def test_the_stonewall_is_whole_seconds_for_ior_and_mdtest() -> None:
    assert [whole_seconds(s) for s in (0.0, 0.4, 1.0, 2.6, 300.0)] == ["0", "1", "1", "3", "300"]


def test_signatures_differ_between_families_and_stay_positive() -> None:
    assert len({EASY_G, HARD_G, MD_EASY_G, MD_HARD_G}) == 4
    assert all(0 < g < 2_000_000_000 for g in (EASY_G, HARD_G, MD_EASY_G, MD_HARD_G))
