"""The exact IOR and mdtest command lines of the IO500 suite's phases
(``suite.tool = "ior"``), with the arguments the reference implementation
gives them (github.com/IO500/io500: ``src/phase_ior_easy.c``,
``phase_ior_hard.c``, ``phase_mdtest_easy.c``, ``phase_mdtest_hard.c`` and
their ``*_write``/``*_read``/``*_stat``/``*_delete`` phases), in its order.

BenchFS adds where IOR reports (``-O summaryFormat=JSON -O
summaryFile=...``) so its output can be read; the stonewall status files
(IOR ``stoneWallingStatusFile``, mdtest ``-x``) let the read, stat and
delete phases operate on exactly what the write phases made, as in IO500.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchfs.config.suite import IOR_HARD_TRANSFER, MDTEST_HARD_BYTES, SuiteSizes

API = "POSIX"
DATA_PACKET = "--dataPacketType=timestamp"  # the reference's default


@dataclass(frozen=True)
class SuitePlaces:
    """Where the tools work: ``data`` (IO500's datadir) and ``results``
    (its resultdir: stonewall status files, per-rank CSVs, IOR's JSON)."""

    data: Path
    results: Path
    seed: int = 4711  # IOR -G / mdtest -G: the reference hashes the phase and time


def signature(places: SuitePlaces, family: str) -> int:
    """A fixed timestamp signature per phase family (IOR ``-G``), from the run's seed."""
    return (places.seed + sum(map(ord, family))) % 2_000_000_000 or 4711


def _ior_easy(ior: Path, sizes: SuiteSizes, places: SuitePlaces) -> list[str]:
    return [
        str(ior), DATA_PACKET, "-g", "-G", str(signature(places, "ior-easy")), "-k", "-e",
        "-o", str(places.data / "ior-easy" / "ior_file_easy"),
        "-C", "-Q", "1",
        "-O", f"stoneWallingStatusFile={places.results / 'ior-easy.stonewall'}",
        "-t", str(sizes.ior_easy_transfer_size), "-b", str(sizes.ior_easy_block_size),
        "-F",
    ]  # fmt: skip


def _ior_hard(ior: Path, sizes: SuiteSizes, places: SuitePlaces) -> list[str]:
    return [
        str(ior), DATA_PACKET, "-C", "-Q", "1", "-g", f"-G={signature(places, 'ior-hard')}",
        "-k", "-e", "-o", str(places.data / "ior-hard" / "file"),
        "-O", f"stoneWallingStatusFile={places.results / 'ior-hard.stonewall'}",
        "-t", str(IOR_HARD_TRANSFER), "-b", str(IOR_HARD_TRANSFER),
        "-s", str(sizes.ior_hard_segments),
    ]  # fmt: skip


def _mdtest_easy(mdtest: Path, sizes: SuiteSizes, places: SuitePlaces) -> list[str]:
    return [
        str(mdtest), DATA_PACKET, "-n", str(sizes.mdtest_easy_files), "-u", "-L", "-F", "-P",
        "-G", str(signature(places, "mdtest-easy")), "-N", "1",
        "-d", str(places.data / "mdtest-easy"),
        "-x", str(places.results / "mdtest-easy.stonewall"),
    ]  # fmt: skip


def _mdtest_hard(mdtest: Path, sizes: SuiteSizes, places: SuitePlaces) -> list[str]:
    return [
        str(mdtest), DATA_PACKET, "-n", str(sizes.mdtest_hard_files), "-t",
        "-w", str(MDTEST_HARD_BYTES), "-e", str(MDTEST_HARD_BYTES), "-P",
        f"-G={signature(places, 'mdtest-hard')}", "-N", "1", "-F",
        "-d", str(places.data / "mdtest-hard"),
        "-x", str(places.results / "mdtest-hard.stonewall"),
    ]  # fmt: skip


def whole_seconds(seconds: float) -> str:
    """IOR's -D and mdtest's -W take whole seconds: a stonewall rounds to at least 1."""
    return "0" if seconds <= 0 else str(max(1, round(seconds)))


def ior_summary_file(places: SuitePlaces, phase: str) -> Path:
    return places.results / f"{phase}.json"


def phase_argv(
    phase: str, ior: Path, mdtest: Path, sizes: SuiteSizes, places: SuitePlaces
) -> list[str]:
    """The command line of one IO500 phase (not find: BenchFS scans itself)."""
    stonewall = whole_seconds(sizes.stonewall_s)
    csv = places.results / f"{phase}.csv"
    if phase.startswith("ior-"):
        easy = phase.startswith("ior-easy")
        argv = _ior_easy(ior, sizes, places) if easy else _ior_hard(ior, sizes, places)
        if phase.endswith("-write"):
            if easy:
                argv += ["-w", "-D", stonewall, "-O", "stoneWallingWearOut=1", "-a", API,
                         "-O", f"saveRankPerformanceDetailsCSV={csv}"]  # fmt: skip
            else:
                argv += ["-w", "-D", stonewall, "-a", API,
                         "-O", f"saveRankPerformanceDetailsCSV={csv}",
                         "-O", "stoneWallingWearOut=1"]  # fmt: skip
        else:
            argv += ["-r", "-R", "-a", API, "-O", f"saveRankPerformanceDetailsCSV={csv}"]
        return [*argv, "-O", "summaryFormat=JSON", "-O",
                f"summaryFile={ior_summary_file(places, phase)}"]  # fmt: skip
    family, _, operation = phase.rpartition("-")
    easy = family == "mdtest-easy"
    argv = _mdtest_easy(mdtest, sizes, places) if easy else _mdtest_hard(mdtest, sizes, places)
    steps = {
        "write": ["-C", "-Y", "-W", stonewall],
        "stat": ["-T"],
        "read": ["-E", "-X"],
        "delete": ["-r"],
    }
    return [*argv, *steps[operation], f"--saveRankPerformanceDetails={csv}", "-a", API]
