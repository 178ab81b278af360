"""The ini file and command line of the reference's io500 binary
(``suite.tool = "io500"``), from the ``[suite]`` settings.

The keys are the binary's own (``io500 --list``; its ``src/phase_*.c``
option tables): the data and result directories without the timestamp
suffix (BenchFS gives each run its own), the POSIX API, the stonewall in
whole seconds, and the ior-easy, ior-hard, mdtest-easy and mdtest-hard
sizes. Everything else keeps the reference's default, so its rules judge
the result as they would any other.
"""

from __future__ import annotations

from pathlib import Path

from benchfs.config.suite import SuiteSizes
from benchfs.tools.io500_argv import API, whole_seconds

INI_NAME = "io500.ini"
RESULT_DIR = "io500"  # the binary's resultdir, under workload/tool/


def io500_ini(sizes: SuiteSizes, data: Path, results: Path) -> str:
    """The ini text: ``data`` is the binary's datadir, ``results`` its resultdir."""
    sections = {
        "global": {
            "datadir": str(data),
            "timestamp-datadir": "FALSE",
            "resultdir": str(results),
            "timestamp-resultdir": "FALSE",
            "api": API,
        },
        "debug": {"stonewall-time": whole_seconds(sizes.stonewall_s)},
        "ior-easy": {
            "transferSize": str(sizes.ior_easy_transfer_size),
            "blockSize": str(sizes.ior_easy_block_size),
        },
        "ior-hard": {"segmentCount": str(sizes.ior_hard_segments)},
        "mdtest-easy": {"n": str(sizes.mdtest_easy_files)},
        "mdtest-hard": {"n": str(sizes.mdtest_hard_files)},
    }
    blocks = [
        "\n".join([f"[{name}]", *(f"{key} = {value}" for key, value in keys.items())])
        for name, keys in sections.items()
    ]
    return "\n\n".join(blocks) + "\n"


def io500_argv(binary: Path, ini: Path) -> list[str]:
    """What each rank runs: the binary and its ini (standard mode, the default)."""
    return [str(binary), str(ini)]
