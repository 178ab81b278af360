"""Deadlines from input are bounded at the boundary: an absurd one is a
ValueError naming the argument, never an overflow inside the engine."""

from __future__ import annotations

from pathlib import Path

import pytest

import benchfs_native as bn

ABSURD = [1e19, float("inf"), float("nan"), 8 * 24 * 3600.0, -1.0]


@pytest.mark.parametrize("value", ABSURD)
@pytest.mark.parametrize("argument", ["connect_deadline_s", "rpc_deadline_s"])
def test_client_deadlines_are_bounded(tmp_path: Path, argument: str, value: float) -> None:
    with pytest.raises(ValueError, match=argument):
        bn.Client(str(tmp_path), 1, **{argument: value})


@pytest.mark.parametrize("value", ABSURD)
def test_daemon_shutdown_deadline_is_bounded(tmp_path: Path, value: float) -> None:
    with pytest.raises(ValueError, match="shutdown_deadline_s"):
        bn.serve_daemon(
            node_name="n0",
            node_id=0,
            daemon_index=0,
            data_dir=str(tmp_path / "data"),
            registry_dir=str(tmp_path / "registry"),
            chunk_size=1 << 20,
            buffer_pool_size=16 << 20,
            durability="none",
            transport="auto",
            max_concurrency=4,
            trace_dir=None,
            shutdown_deadline_s=value,
        )
    assert not (tmp_path / "registry").exists(), "the daemon started anyway"
