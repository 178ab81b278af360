"""workload.tool and its settings: a tool's keys need a tool, one workload at a time."""

from __future__ import annotations

import pytest

from benchfs.config import parse_config
from benchfs.errors import ConfigError


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as error:
        parse_config(text, "run.toml")
    return str(error.value)


def test_a_tool_with_its_arguments_is_read() -> None:
    plan = parse_config(
        '[workload]\ntool = "ior"\ntool_args = ["-w", "-F"]\ntool_path = "/opt/ior/bin"\n'
        'target = "posix:/tmp"\n',
        "run.toml",
    )
    workload = plan.base.workload
    assert (workload.tool, workload.tool_args, workload.tool_path) == (
        "ior",
        ["-w", "-F"],
        "/opt/ior/bin",
    )


def test_a_tool_s_keys_without_a_tool_are_refused() -> None:
    assert "tool_args and tool_path need a tool" in error_of('[workload]\ntool_args = ["-w"]\n')
    assert 'fio_job needs tool = "fio"' in error_of('[workload]\ntool = "ior"\nfio_job = "j.fio"\n')
    assert "workload.tool" in error_of('[workload]\ntool = "iozone"\n')


def test_a_tool_replaces_the_metadata_workload_too() -> None:
    message = error_of(
        '[workload]\ntool = "mdtest"\ntarget = "posix:/tmp"\n[metadata]\nmode = "only"\n'
    )
    assert 'replaces the built-in workload: metadata.mode must be "off"' in message


def test_a_tool_needs_a_mounted_file_system() -> None:
    message = error_of('[workload]\ntool = "fio"\ntool_args = ["--name=a"]\n')
    assert "workload.tool = 'fio' needs a mounted file system: set" in message
    assert 'workload.target = "posix:PATH"' in message


def test_the_metadata_workload_runs_on_a_posix_target() -> None:
    plan = parse_config(
        '[workload]\ntarget = "posix:/tmp"\n[metadata]\nmode = "with-data"\n', "run.toml"
    )
    assert plan.base.metadata.mode == "with-data" and plan.base.workload.posix_path is not None
