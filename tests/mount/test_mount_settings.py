"""The mount's settings in one shape: what a run, `benchfs mount` and a mount
process read are the fields of `MountSettings`, written by one `to_argv`."""

from __future__ import annotations

import pytest
import typer

from analysis.manifest import MountOptions, MountRecord
from benchfs.cli.main import app
from benchfs.config.model import Deadlines, MountConfig
from benchfs.errors import ConfigError
from benchfs.mount.settings import MountSettings, option_of

# Every field away from its default.
CHANGED = MountSettings(
    read_only=True,
    threads=9,
    attr_timeout_s=0.25,
    entry_timeout_s=1.5,
    rpc_deadline_s=12.5,
    connect_deadline_s=33.0,
    session_spin_us=70,
)


def test_every_field_differs_from_its_default_in_the_changed_settings() -> None:
    defaults = MountSettings()
    # allow_other needs root; the rest must all change, or the tests below miss a field.
    same = [name for name in MountSettings.model_fields if getattr(CHANGED, name) ==
            getattr(defaults, name)]  # fmt: skip
    assert same == ["allow_other"]


def test_the_options_written_are_read_back_whole() -> None:
    assert MountSettings.from_argv(CHANGED.to_argv()) == CHANGED
    assert MountSettings.from_argv(MountSettings().to_argv()) == MountSettings()


def test_a_run_records_every_setting_and_reads_them_back_as_they_were() -> None:
    # A field MountSettings alone had would be dropped from the manifest.
    assert list(MountSettings.model_fields) == list(MountOptions.model_fields)
    record = MountRecord(options=CHANGED, root="/r", nodes={})
    read = MountRecord.model_validate_json(record.model_dump_json())
    assert read.options.model_dump() == CHANGED.model_dump()


def test_benchfs_mount_has_one_option_per_field_with_the_model_default_and_reads_to_argv() -> None:
    # A group of commands (typer's own click classes: looked up by name, not type).
    mount = typer.main.get_command(app).commands["mount"]  # type: ignore[attr-defined]
    options = {opt: param for param in mount.params for opt in getattr(param, "opts", [])}
    context = mount.make_context("mount", ["--registry", "/r", "/m", *CHANGED.to_argv()])
    for name, field in MountSettings.model_fields.items():
        param = options[option_of(name)]
        assert param.default == field.default, name
        assert context.params[param.name] == getattr(CHANGED, name), name


def test_a_run_s_mount_section_has_the_same_bounds_and_defaults_as_the_mount() -> None:
    for name, field in MountConfig.model_fields.items():
        mine = MountSettings.model_fields[name]
        assert (field.default, field.metadata) == (mine.default, mine.metadata), name
    run = MountSettings.for_run(MountConfig(threads=2, session_spin_us=5), Deadlines(), 4)
    assert (run.threads, run.session_spin_us, run.allow_other, run.read_only) == (
        2,
        5,
        False,
        False,
    )
    assert (run.rpc_deadline_s, run.connect_deadline_s) == (
        Deadlines().rpc_s,
        Deadlines().register_s + 4 * Deadlines().per_node_s,
    )


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"threads": 257}, r"^--threads: 257 is not between 0 and 256$"),
        ({"rpc_deadline_s": 0.0}, r"^--rpc-deadline: 0.0 is not in \(0, 3600\] seconds$"),
        ({"session_spin_us": 1001}, r"^--session-spin: 1001 is not between 0 and 1000 micro"),
    ],
)
def test_a_bad_value_is_one_line_naming_its_option(values: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        MountSettings.checked(**values)
