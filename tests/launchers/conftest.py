"""Fixtures for launcher tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from netns_hosts import NamespaceHosts, namespace_hosts_fixture


@pytest.fixture(scope="session")
def namespace_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NamespaceHosts]:
    """Two hosts, each a network namespace with its own address (root only)."""
    yield from namespace_hosts_fixture(tmp_path_factory)
