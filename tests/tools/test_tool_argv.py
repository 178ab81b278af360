"""The exact command lines of IOR, mdtest and fio under benchfs run, and how
a tool's binary is found."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from benchfs.errors import ConfigError, ToolError
from benchfs.tools.locate import find_tool, version_line
from benchfs.tools.tool_argv import check_fio_job, fio_argv, ior_argv, mdtest_argv

BIN = Path("/opt/x/ior")


def test_ior_argv_is_the_users_arguments_then_where_and_how_it_reports() -> None:
    argv = ior_argv(BIN, ["-a", "POSIX", "-w", "-r", "-F", "-t", "1m", "-b", "16m"],
                    Path("/mnt/t"), Path("/res/workload/tool/ior-summary.json"))  # fmt: skip
    assert argv == [
        "/opt/x/ior", "-a", "POSIX", "-w", "-r", "-F", "-t", "1m", "-b", "16m",
        "-o", "/mnt/t/ior/testfile",
        "-O", "summaryFormat=JSON",
        "-O", "summaryFile=/res/workload/tool/ior-summary.json",
    ]  # fmt: skip


def test_mdtest_argv_works_in_the_target() -> None:
    argv = mdtest_argv(Path("/opt/x/mdtest"), ["-n", "100", "-F", "-u"], Path("/mnt/t"))
    assert argv == ["/opt/x/mdtest", "-n", "100", "-F", "-u", "-d", "/mnt/t/mdtest"]


def test_fio_argv_reports_json_in_the_node_directory_with_the_job_file_last() -> None:
    argv = fio_argv(Path("/usr/bin/fio"), ["--runtime=5"], Path("/mnt/t/n0"), Path("/j.fio"))
    assert argv == [
        "/usr/bin/fio", "--output-format=json", "--directory=/mnt/t/n0",
        "--aux-path=/mnt/t/n0", "--runtime=5", "/j.fio"
    ]  # fmt: skip
    assert fio_argv(Path("fio"), ["--name=a", "--rw=write"], Path("/d")) == [
        "fio", "--output-format=json", "--directory=/d", "--aux-path=/d", "--name=a", "--rw=write"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ior_argv(BIN, ["-o", "/x"], Path("/t"), Path("/s")), "ior -o is set by benchfs"),
        (lambda: ior_argv(BIN, ["-O", "summaryFile=/x"], Path("/t"), Path("/s")),
         "ior -O summaryFile is set by benchfs"),
        (lambda: mdtest_argv(BIN, ["-d", "/x"], Path("/t")), "mdtest -d is set by benchfs"),
        (lambda: fio_argv(BIN, ["--output=/x"], Path("/t")), "fio --output is set by benchfs"),
        (lambda: fio_argv(BIN, ["--directory=/x"], Path("/t")),
         "fio --directory is set by benchfs"),
        (lambda: fio_argv(BIN, ["--aux-path=/x"], Path("/t")), "fio --aux-path is set by benchfs"),
    ],
)  # fmt: skip
def test_arguments_that_move_the_tool_or_its_output_are_refused(build, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="workload.tool_args: " + message):
        build()


def test_a_fio_job_file_that_names_its_directory_is_refused(tmp_path: Path) -> None:
    job = tmp_path / "j.fio"
    job.write_text("[global]\nrw=write\n  directory = /elsewhere\n")
    with pytest.raises(ConfigError, match=r"j.fio, line 3: directory is set by benchfs"):
        check_fio_job(job)
    with pytest.raises(ConfigError, match=r"workload.fio_job: cannot read"):
        check_fio_job(tmp_path / "absent.fio")


def _executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\necho IOR-9.9.9\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_tool_path_names_the_binary_or_its_directory(tmp_path: Path) -> None:
    binary = _executable(tmp_path / "ior")
    assert find_tool("ior", str(binary), environ={"PATH": ""}) == binary
    assert find_tool("ior", str(tmp_path), environ={"PATH": ""}) == binary
    with pytest.raises(ToolError, match=r"mdtest not found: .*/mdtest: no such file or directory "
                                        r"\(workload.tool_path = "):  # fmt: skip
        find_tool("mdtest", str(tmp_path), environ={"PATH": ""})


def test_ior_is_found_in_ior_bin_dir_and_a_missing_tool_names_the_setting(tmp_path: Path) -> None:
    binary = _executable(tmp_path / "mdtest")
    found = find_tool("mdtest", environ={"PATH": "", "IOR_BIN_DIR": str(tmp_path)})
    assert found == binary
    empty = str(tmp_path / "none")
    if os.access("/opt/ior/bin/ior", os.X_OK):
        pytest.skip("/opt/ior/bin/ior exists, so ior is never missing here")
    with pytest.raises(ToolError) as error:
        find_tool("ior", environ={"PATH": empty, "IOR_BIN_DIR": empty})
    assert str(error.value) == (
        f"ior not found on PATH, {empty}, /opt/ior/bin: "
        "set workload.tool_path to the ior binary or its directory"
    )


def test_the_version_line_is_the_one_naming_the_tool() -> None:
    mdtest = "-- started at 11/25/2026 10:00:00 --\n\nmdtest-4.0.0 was launched with 2 total\n"
    assert version_line("mdtest", mdtest) == "mdtest-4.0.0 was launched with 2 total"
    assert version_line("ior", "IOR-4.0.0: MPI Coordinated Test\n") == (
        "IOR-4.0.0: MPI Coordinated Test"
    )
    assert version_line("ior", "\nsomething else\n") == "something else"
