"""The [suite] section: the suites' own sizes, keys set over them, and one
clear error naming the key for a bad suite or a bad setting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchfs.config import apply_overrides, load_config, parse_config
from benchfs.errors import ConfigError


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as error:
        parse_config(text, "run.toml")
    return str(error.value)


def test_each_suite_has_its_own_sizes_and_keys_set_win() -> None:
    full = parse_config('[suite]\nname = "io500"\n', "run.toml").base.suite.sizes()
    assert (full.stonewall_s, full.ior_easy_transfer_size) == (300.0, 2 << 20)
    assert (full.ior_hard_segments, full.mdtest_easy_files) == (10_000_000, 1_000_000)
    quick = parse_config(
        '[suite]\nname = "io500-quick"\nstonewall_s = 0.5\nmdtest_hard_files = 77\n', "run.toml"
    ).base.suite.sizes()
    assert (quick.name, quick.tool, quick.stonewall_s) == ("io500-quick", "builtin", 0.5)
    assert quick.mdtest_hard_files == 77 and quick.ior_easy_block_size == 128 << 20


def test_a_bad_suite_name_names_the_key() -> None:
    plan = load_config(None)
    with pytest.raises(ConfigError, match=r"^--set suite.name: .*'io500-quick'"):
        apply_overrides(plan, {"suite.name": "io400"})


def test_suite_settings_without_a_suite_name_the_key() -> None:
    assert "suite: stonewall_s needs a suite: set suite.name" in error_of(
        "[suite]\nstonewall_s = 3\n"
    )
    assert "run.toml: suite.mdtest_easy_files: Input should be greater than or equal to 1" in (
        error_of('[suite]\nname = "io500"\nmdtest_easy_files = 0\n')
    )
    assert "run.toml: suite.tool: " in error_of('[suite]\nname = "io500"\ntool = "elbencho"\n')
    assert "ior_easy_block_size (1000000) must be a multiple of ior_easy_transfer_size" in (
        error_of('[suite]\nname = "io500"\nior_easy_block_size = 1000000\n')
    )
    assert 'stonewall_s must be above 0 with tool = "ior"' in error_of(
        '[suite]\nname = "io500-quick"\ntool = "ior"\nstonewall_s = 0\n'
        '[workload]\ntarget = "posix:/tmp"\n'
    )


def test_a_suite_runs_its_own_phases_only() -> None:
    assert "suite.name = 'io500' runs its own metadata phases: metadata.mode must be \"off\"" in (
        error_of('[suite]\nname = "io500"\n[metadata]\nmode = "only"\n')
    )
    assert "runs its own phases: workload.tool must be" in error_of(
        '[suite]\nname = "io500"\n[workload]\ntool = "fio"\ntarget = "posix:/tmp"\n'
        'tool_args = ["--name=a"]\n'
    )
    assert 'suite.tool = "ior" runs on a mounted file system' in error_of(
        '[suite]\nname = "io500"\ntool = "ior"\n'
    )
    assert 'suite.tool = "io500" runs on a mounted file system' in error_of(
        '[suite]\nname = "io500"\ntool = "io500"\n'
    )
    assert 'stonewall_s must be above 0 with tool = "io500"' in error_of(
        '[suite]\nname = "io500-quick"\ntool = "io500"\nstonewall_s = 0\n'
        '[workload]\ntarget = "posix:/tmp"\n'
    )
    assert 'tool_path needs tool = "ior" (IOR and mdtest) or tool = "io500"' in error_of(
        '[suite]\nname = "io500"\ntool_path = "/opt/io500"\n'
    )
    binary = parse_config(
        '[suite]\nname = "io500-quick"\ntool = "io500"\ntool_path = "/opt/io500"\n'
        '[workload]\ntarget = "posix:/tmp"\n',
        "run.toml",
    ).base.suite
    assert (binary.tool, binary.tool_path, binary.sizes().tool) == ("io500", "/opt/io500", "io500")
    mounted = parse_config('[suite]\nname = "io500"\n[workload]\ninterface = "mount"\n', "run.toml")
    assert mounted.base.suite.name == "io500" and mounted.base.workload.interface == "mount"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--suite", "io600"], "--set suite.name: "),
        (["--suite", "io500", "--set", "suite.stonewall_s=-1"], "--set suite.stonewall_s: "),
        (
            [
                "--suite",
                "io500",
                "--set",
                "workload.target=posix:/tmp",
                "--set",
                "suite.tool=ior",
                "--set",
                "suite.tool_path=/nonexistent/ior-bin",
            ],
            "ior not found: /nonexistent/ior-bin: no such file or directory (suite.tool_path = ",
        ),
    ],
)
def test_the_command_prints_one_line_naming_the_key(
    tmp_path: Path, args: list[str], named: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "run", "--results-dir", str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {named}"), done.stderr
    assert "Traceback" not in done.stderr
