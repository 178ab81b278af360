"""Values the engine would refuse (or overflow on) are refused by the config
check, naming the key, the allowed range and where the value came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchfs.config.plan import apply_overrides, expand_sweep, load_config, parse_config
from benchfs.errors import ConfigError


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as error:
        parse_config(text, "run.toml")
    return str(error.value)


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            "[cluster]\nchunk_size = 1000\n",
            "run.toml: cluster.chunk_size: must be between 512 and 1g, a multiple of 512 "
            "(got 1000)",
        ),
        (
            "[cluster]\nchunk_size = '2g'\n",
            "run.toml: cluster.chunk_size: must be between 512 and 1g, a multiple of 512 "
            "(got '2g')",
        ),
        (
            "[workload]\ntransfer_size = '2g'\nblock_size = '2g'\n",
            "run.toml: workload.transfer_size: must be above 0 and at most 1g (got '2g')",
        ),
        (
            "[cluster]\nbuffer_pool_size = 1\n",
            "run.toml: cluster.buffer_pool_size: must be between 4k and 16g (got 1)",
        ),
        (
            "[cluster]\ndata_dir = ''\n",
            "run.toml: cluster.data_dir: String should have at least 1 character (got '')",
        ),
        (
            "[cluster]\nlocal_nodes = 100000\n",
            "run.toml: cluster.local_nodes: must be between 1 and 256 (got 100000)",
        ),
        (
            "[cluster.deadlines]\nshutdown_s = 1e19\n",
            "run.toml: cluster.deadlines.shutdown_s: must be above 0 and at most 604800 "
            "(got 1e+19)",
        ),
        (
            "[cluster.deadlines]\nphase_s = inf\n",
            "run.toml: cluster.deadlines.phase_s: must be above 0 and at most 604800 (got inf)",
        ),
        (
            "[workload]\nstonewall_s = nan\n",
            "run.toml: workload.stonewall_s: must be between 0 and 604800 (got nan)",
        ),
        (
            "[workload]\nsegments = 99999999999\n",
            "run.toml: workload.segments: must be between 1 and 1048576 (got 99999999999)",
        ),
    ],
)
def test_out_of_range_values_name_key_and_range(toml: str, expected: str) -> None:
    assert error_of(toml) == expected


def test_the_defaults_are_within_bounds() -> None:
    config = load_config(None).base
    assert config.cluster.data_dir is None  # this user's temporary directory
    assert config.cluster.chunk_size == 4 << 20


def test_a_set_error_is_blamed_on_the_set_key() -> None:
    plan = load_config(None)
    with pytest.raises(ConfigError) as error:
        apply_overrides(plan, {"cluster.chunk_size": "1000"})
    assert str(error.value) == (
        "--set cluster.chunk_size: must be between 512 and 1g, a multiple of 512 (got '1000')"
    )
    # Two keys that disagree (a problem of the section): the override is named.
    with pytest.raises(ConfigError) as error:
        apply_overrides(plan, {"workload.transfer_size": "3k"})
    message = str(error.value)
    assert message.startswith("--set workload.transfer_size: workload: block_size"), message
    assert "defaults" not in message


def test_a_swept_set_error_is_blamed_on_the_set_key() -> None:
    plan = apply_overrides(load_config(None), {"workload.transfer_size": "1m,2m"})
    assert len(expand_sweep(plan)) == 2
    with pytest.raises(ConfigError) as error:
        apply_overrides(load_config(None), {"cluster.chunk_size": "1m,1000"})
    assert str(error.value).startswith("--set cluster.chunk_size[1]: must be between 512"), str(
        error.value
    )


def test_a_config_that_is_not_utf8_is_one_line_naming_the_file(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_bytes(b"[workload]\nfile_name = '\xff\xfe'\n")
    with pytest.raises(ConfigError) as error:
        load_config(config)
    assert str(error.value) == f"{config}: not UTF-8 text (byte 24): a config file is UTF-8 text"


def test_a_daemon_config_with_a_deadline_beyond_bounds_is_refused_by_key() -> None:
    from benchfs.daemon import parse_daemon_config

    with pytest.raises(ConfigError) as error:
        parse_daemon_config('registry_dir = "/r"\nshutdown_deadline_s = 1e19\n', "d.toml")
    assert str(error.value).startswith("d.toml: shutdown_deadline_s: Input should be less than"), (
        str(error.value)
    )
