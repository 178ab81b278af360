"""A local cluster of real daemons (``benchfs daemon --config``) for the client tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_cluster import CHUNK, NODES, STOP_DEADLINE_S, Cluster

__all__ = ["CHUNK", "NODES", "STOP_DEADLINE_S", "Cluster"]


@pytest.fixture(scope="module", params=["shm", "tcp"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """Four daemons for a module's tests, once over shared memory, once over tcp."""
    transport = str(request.param)
    c = Cluster(tmp_path_factory.mktemp(f"cluster-{transport}"), transport)
    c.start()
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture
def fresh_cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Daemons of one test (not started yet)."""
    c = Cluster(tmp_path, "shm")
    try:
        yield c
    finally:
        c.stop()
