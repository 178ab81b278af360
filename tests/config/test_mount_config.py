"""workload.interface and the [mount] section: the mount is BenchFS's own,
one transfer in flight, tools allowed on it, the metadata workload not."""

from __future__ import annotations

import pytest

from benchfs.config import apply_overrides, load_config, parse_config
from benchfs.errors import ConfigError


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as error:
        parse_config(text, "run.toml")
    return str(error.value)


def test_native_is_the_default_and_mount_is_read_with_its_settings() -> None:
    assert load_config(None).base.workload.interface == "native"
    plan = parse_config(
        '[workload]\ninterface = "mount"\n[mount]\nthreads = 8\nattr_timeout_s = 1.5\n',
        "run.toml",
    )
    config = plan.base
    assert config.workload.interface == "mount" and config.workload.mounted
    assert (config.mount.threads, config.mount.attr_timeout_s, config.mount.entry_timeout_s) == (
        8,
        1.5,
        0.0,
    )


def test_the_mount_needs_the_benchfs_target_naming_the_keys() -> None:
    with pytest.raises(ConfigError) as error:
        apply_overrides(
            load_config(None), {"workload.interface": "mount", "workload.target": "posix:/tmp"}
        )
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("--set workload.interface, workload.target: workload:"), message
    assert 'interface = "mount" mounts BenchFS: it needs target = "benchfs"' in message
    assert "'posix:/tmp'" in message


def test_an_unknown_interface_is_refused_naming_the_key() -> None:
    message = error_of('[workload]\ninterface = "fuse"\n')
    assert message.startswith("run.toml: workload.interface:"), message
    assert "'native'" in message and "'mount'" in message


def test_mount_settings_are_bounded() -> None:
    with pytest.raises(ConfigError) as error:
        apply_overrides(load_config(None), {"mount.threads": "257"})
    assert str(error.value) == "--set mount.threads: must be between 0 and 256 (got '257')"
    assert apply_overrides(load_config(None), {"mount.threads": "0"}).base.mount.threads == 0
    message = error_of("[mount]\nentry_timeout_s = 7200\n")
    assert message == "run.toml: mount.entry_timeout_s: must be between 0 and 3600 (got 7200)"
    assert "mount.readonly: unknown key" in error_of("[mount]\nreadonly = true\n")
    message = error_of("[mount]\nsession_spin_us = 1001\n")
    assert message == "run.toml: mount.session_spin_us: must be between 0 and 1000 (got 1001)"
    spin = apply_overrides(load_config(None), {"mount.session_spin_us": "50"}).base.mount
    assert spin.session_spin_us == 50


def test_the_mount_keeps_one_transfer_in_flight() -> None:
    message = error_of('[workload]\ninterface = "mount"\nqueue_depth = 16\n')
    assert "keeps one transfer in flight per rank: queue_depth must be 1" in message


def test_a_tool_runs_on_the_mount() -> None:
    plan = parse_config(
        '[workload]\ninterface = "mount"\ntool = "fio"\ntool_args = ["--name=a"]\n', "run.toml"
    )
    assert plan.base.workload.tool == "fio"


def test_the_metadata_workload_runs_on_the_mount() -> None:
    plan = parse_config('[workload]\ninterface = "mount"\n[metadata]\nmode = "only"\n', "run.toml")
    assert plan.base.metadata.mode == "only" and plan.base.workload.interface == "mount"
