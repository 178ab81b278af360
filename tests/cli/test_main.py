"""The CLI entry point: version, help, one-line errors and exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import benchfs
from benchfs.cli import main as cli_main
from benchfs.cli.main import app

runner = CliRunner()


def _benchfs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchfs", *args], capture_output=True, text=True, timeout=120
    )


def test_version_names_package_and_native_build() -> None:
    import benchfs_native

    info = benchfs_native.build_info()
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert f"benchfs {benchfs.__version__}" in result.output
    assert info["profile"] in result.output
    assert info["git_revision"] in result.output
    assert f"UCX {info['ucx']}" in result.output


def test_help_lists_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    # Each command opens a row of the Commands panel ("│ bench     Side-by-side ...").
    rows = [line.strip("│ ").split(" ")[0] for line in result.output.splitlines()]
    commands = ["report", "compare", "diagnose", "run", "daemon", "bench", "analyze"]
    assert [row for row in rows if row in commands] == commands, result.output


def test_bad_option_value_is_one_line_without_traceback() -> None:
    result = _benchfs("bench", "storage", "--seq-size", "lots")
    assert result.returncode == 2
    assert "--seq-size" in result.stderr
    assert "Traceback" not in result.stderr
    assert "bad size 'lots'" in result.stderr


def test_error_from_the_library_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    result = _benchfs("bench", "storage", "--dir", str(missing))
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: benchmark directory {missing} does not exist"


def test_verbose_shows_the_traceback(tmp_path: Path) -> None:
    result = _benchfs("--verbose", "bench", "storage", "--dir", str(tmp_path / "absent"))
    assert result.returncode != 0
    assert "Traceback" in result.stderr
    assert "ToolError" in result.stderr


def test_ctrl_c_while_the_error_line_is_printed_ends_in_130_not_an_escaping_interrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The command's scope has ended by then, so no handler of ours is installed.
    def interrupted(*_args: object, **_options: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_main.err_console, "print", interrupted)
    monkeypatch.setattr(sys, "argv", ["benchfs", "bench", "storage", "--dir", str(tmp_path / "x")])
    with pytest.raises((SystemExit, KeyboardInterrupt)) as ended:
        cli_main.main()
    assert isinstance(ended.value, SystemExit) and ended.value.code == 130
