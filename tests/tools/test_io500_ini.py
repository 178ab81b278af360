"""The io500 binary's ini and command line (``suite.tool = "io500"``),
exactly: the keys of the reference's own option tables (``io500 --list``)
with the [suite] settings, and where the binary is looked for."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from benchfs.config.suite import SuiteSizes
from benchfs.errors import ToolError
from benchfs.tools.io500_ini import io500_argv, io500_ini
from benchfs.tools.locate import find_tool


def sizes(*values: Any) -> SuiteSizes:
    """The suite's sizes in the order of their fields."""
    return SuiteSizes(**dict(zip(SuiteSizes.model_fields, values, strict=True)))


QUICK = sizes("io500-quick", "io500", 1.0, 1 << 20, 128 << 20, 2000, 5000, 2000)


def test_the_ini_carries_the_suite_settings_in_the_binarys_keys() -> None:
    assert io500_ini(QUICK, Path("/scratch/p0/io500-data"), Path("/res/workload/tool/io500")) == (
        "[global]\n"
        "datadir = /scratch/p0/io500-data\n"
        "timestamp-datadir = FALSE\n"
        "resultdir = /res/workload/tool/io500\n"
        "timestamp-resultdir = FALSE\n"
        "api = POSIX\n"
        "\n"
        "[debug]\n"
        "stonewall-time = 1\n"
        "\n"
        "[ior-easy]\n"
        "transferSize = 1048576\n"
        "blockSize = 134217728\n"
        "\n"
        "[ior-hard]\n"
        "segmentCount = 2000\n"
        "\n"
        "[mdtest-easy]\n"
        "n = 5000\n"
        "\n"
        "[mdtest-hard]\n"
        "n = 2000\n"
    )


def test_the_stonewall_is_whole_seconds_as_the_binary_reads_it() -> None:
    full = sizes("io500", "io500", 300.0, 2 << 20, 1 << 40, 10_000_000, 10**6, 10**6)
    text = io500_ini(full, Path("/d"), Path("/r"))
    assert "[debug]\nstonewall-time = 300\n" in text
    assert "blockSize = 1099511627776\n" in text and "segmentCount = 10000000\n" in text
    short = sizes("io500-quick", "io500", 0.4, 1 << 20, 1 << 20, 1, 1, 1)
    assert "stonewall-time = 1\n" in io500_ini(short, Path("/d"), Path("/r"))


def test_the_command_line_is_the_binary_and_its_ini() -> None:
    assert io500_argv(Path("/opt/io500/io500"), Path("/res/workload/tool/io500.ini")) == [
        "/opt/io500/io500",
        "/res/workload/tool/io500.ini",
    ]


def _binary(directory: Path) -> Path:
    binary = directory / "io500"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o700)
    return binary


def test_the_binary_is_found_by_its_setting_or_io500_bin_dir(tmp_path: Path) -> None:
    binary = _binary(tmp_path)
    assert find_tool("io500", str(tmp_path), setting="suite.tool_path") == binary
    assert find_tool("io500", str(binary), setting="suite.tool_path") == binary
    environ = {"PATH": os.defpath, "IO500_BIN_DIR": str(tmp_path)}
    assert find_tool("io500", None, environ, setting="suite.tool_path") == binary


def test_a_missing_binary_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"io500 not found: .*suite.tool_path = "):
        find_tool("io500", str(tmp_path / "nowhere"), setting="suite.tool_path")
    environ = {"PATH": str(tmp_path)}
    with pytest.raises(
        ToolError,
        match=r"io500 not found on PATH: set suite.tool_path \(or \$IO500_BIN_DIR\) to the io500",
    ):
        find_tool("io500", None, environ, setting="suite.tool_path")
