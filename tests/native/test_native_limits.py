"""The engine's bounds, exported once (`benchfs_native.LIMITS`): the Python side
checks the same ones, and both refuse one past a bound."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

import benchfs_native
from benchfs.config import model
from benchfs.daemon import settings as daemon_settings
from benchfs.errors import ConfigError
from benchfs.mount.settings import MountSettings

LIMITS = benchfs_native.LIMITS


def _upper(model_class: type[model.BaseModel], field: str) -> int:
    (bound,) = [meta.le for meta in model_class.model_fields[field].metadata if hasattr(meta, "le")]
    return int(bound)


def test_every_bound_is_a_positive_whole_number() -> None:
    assert set(LIMITS) == {
        "max_chunk", "max_pool_bytes", "max_io", "max_read", "max_concurrency",
        "max_bulk_spin_us", "max_mount_threads", "max_mount_session_spin_us",
        "max_name", "max_path", "max_node_name",
    }  # fmt: skip
    assert all(isinstance(value, int) and value > 0 for value in LIMITS.values())


def test_the_python_models_bound_their_fields_by_the_engine_s_figures() -> None:
    assert _upper(model.ClusterConfig, "chunk_size") == LIMITS["max_chunk"]
    assert _upper(model.ClusterConfig, "buffer_pool_size") == LIMITS["max_pool_bytes"]
    assert _upper(MountSettings, "threads") == LIMITS["max_mount_threads"]
    assert _upper(MountSettings, "session_spin_us") == LIMITS["max_mount_session_spin_us"]
    assert _upper(model.MountConfig, "threads") == LIMITS["max_mount_threads"]
    assert _upper(daemon_settings.DaemonSettings, "max_concurrency") == LIMITS["max_concurrency"]
    assert LIMITS["max_node_name"] == daemon_settings.MAX_NODE_NAME
    assert LIMITS["max_io"] == model.MAX_IO


@pytest.mark.parametrize(
    ("field", "limit"),
    [("threads", "max_mount_threads"), ("session_spin_us", "max_mount_session_spin_us")],
)
def test_one_past_a_mount_bound_is_refused_on_both_sides(
    tmp_path: Path, field: str, limit: str
) -> None:
    bound = LIMITS[limit]
    assert getattr(MountSettings.checked(**{field: bound}), field) == bound
    with pytest.raises(ConfigError, match=rf"is not between 0 and {bound}\b"):
        MountSettings.checked(**{field: bound + 1})
    # The engine checks its options before it reads the registry.
    with pytest.raises(ValueError, match=field.removesuffix("_us")):
        benchfs_native.serve_mount(str(tmp_path), str(tmp_path), **{field: bound + 1})


def test_one_past_the_chunk_bound_is_refused_on_both_sides(tmp_path: Path) -> None:
    past = LIMITS["max_chunk"] + 512
    with pytest.raises(ValidationError, match="chunk_size"):
        model.ClusterConfig(chunk_size=past)
    with pytest.raises(ValueError, match="chunk"):
        benchfs_native.ChunkStore(str(tmp_path), chunk_size=past)
