"""Fixtures for `benchfs run` tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fixtures.slowdisk import slow_disk_factory
from launchers.netns_hosts import NamespaceHosts, namespace_hosts_fixture
from launchers.slurm_cluster import SlurmCluster, slurm_cluster_fixture

__all__ = [
    "sixteen_namespace_hosts",
    "slow_disk_factory",
    "slurm_on_sixteen_namespace_hosts",
    "slurm_on_three_namespace_hosts",
    "three_hosts_with_own_mounts",
    "three_namespace_hosts",
    "two_hosts_sharing_mounts",
]


@pytest.fixture(scope="session")
def three_namespace_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NamespaceHosts]:
    """Three hosts, each a network namespace with its own address (root only)."""
    yield from namespace_hosts_fixture(tmp_path_factory, count=3)


@pytest.fixture(scope="session")
def sixteen_namespace_hosts(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[NamespaceHosts]:
    """Sixteen hosts, each a network namespace with its own address (root only)."""
    yield from namespace_hosts_fixture(tmp_path_factory, count=16)


@pytest.fixture(scope="session")
def two_hosts_sharing_mounts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NamespaceHosts]:
    """Two hosts, each a network namespace, whose processes see one another's
    mounts as processes on one real host do (root only)."""
    yield from namespace_hosts_fixture(tmp_path_factory, count=2, shared_mounts=True)


@pytest.fixture(scope="session")
def three_hosts_with_own_mounts(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[NamespaceHosts]:
    """Three hosts, each a network namespace and a mount namespace of its own:
    a mount made on a host is seen by every process there and on no other
    host, as on separate machines (root only)."""
    yield from namespace_hosts_fixture(tmp_path_factory, count=3, own_mounts=True)


@pytest.fixture
def slurm_on_three_namespace_hosts(
    three_namespace_hosts: NamespaceHosts, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SlurmCluster]:
    """Slurm with the three namespace hosts as its nodes: slurmctld and munged
    here, a slurmd in each namespace (root and the Slurm packages only)."""
    yield from slurm_cluster_fixture(three_namespace_hosts, tmp_path_factory)


@pytest.fixture
def slurm_on_sixteen_namespace_hosts(
    sixteen_namespace_hosts: NamespaceHosts, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SlurmCluster]:
    """Slurm with the sixteen namespace hosts as its nodes (root and the Slurm packages only)."""
    yield from slurm_cluster_fixture(sixteen_namespace_hosts, tmp_path_factory)
