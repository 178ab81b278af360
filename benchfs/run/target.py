"""Steps 5, 6 and 6a of the flow (docs/ARCHITECTURE.md): what a point's
workload works on, whatever its mode.

- BenchFS through the engine's client (``workload.interface = "native"``):
  the daemons, started or kept (``Cluster.ensure``) and registered;
- BenchFS through its mount (``"mount"``): the same daemons, and every
  node's FUSE mount at ``<mount root>/<node>``;
- a ``posix:PATH`` target: no daemons, the workload in ``PATH/<work name>``.

``open_target`` does these steps and records them in the manifest
(interface, daemons, rank counts, mounts); the ``Target`` it returns says
where the workload goes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.layout import RunLayout
from benchfs.cluster.hostfile import Host
from benchfs.config.model import Interface, RunConfig
from benchfs.launchers.base import Launcher
from benchfs.results.manifest import ManifestRecorder, RanksRecord
from benchfs.run.cluster import Cluster
from benchfs.run.mounts import MountGroup


@dataclass(frozen=True)
class Target:
    """Where one point's workload works."""

    interface: Interface
    # ``benchfs-<token>-p<k>``: the workload's directory in its file system.
    work_name: str
    # The daemons' registry and node names (a posix: target: the point's state dir, none).
    registry_dir: Path
    node_names: list[str]
    # A posix: target: ``PATH/<work name>``, as every host names it.
    posix_dir: Path | None = None
    # Through the mount: every node's mount, at ``mounts.args.mount_root/<node>``.
    mounts: MountGroup | None = None

    @property
    def native(self) -> bool:
        """The ranks call the engine's client (they may record its trace)."""
        return self.posix_dir is None and self.mounts is None

    @property
    def mount_root(self) -> Path | None:
        return None if self.mounts is None else self.mounts.args.mount_root


def open_target(
    cluster: Cluster,
    config: RunConfig,
    hosts: list[Host],
    launcher: Launcher,
    *,
    point: int,
    layout: RunLayout,
    record: ManifestRecorder,
    ranks: RanksRecord,
) -> Target:
    """The daemons (and mounts) the point's config asks for, live and recorded."""
    workload = config.workload
    record.interface(workload.interface)
    work_name = f"{cluster.scratch.name}-p{point}"
    if workload.posix_path is not None:
        cluster.without_daemons(hosts, launcher)
        record.daemons([], ranks)
        return Target(
            workload.interface,
            work_name,
            registry_dir=cluster.scratch.point_dir(point),
            node_names=[],
            posix_dir=Path(workload.posix_path) / work_name,
        )
    cluster.ensure(config, hosts, launcher)
    assert cluster.group is not None
    cluster.group.served.append(layout.root)
    record.daemons(cluster.group.records_by_node_id(), ranks)
    record.membership(cluster.group.membership_record())
    mounts = None
    if workload.interface == "mount":
        mounts = cluster.mount(config, point, layout.mount_logs_dir)
        record.mount(mounts.record())
    return Target(
        workload.interface,
        work_name,
        registry_dir=cluster.group.registry_dir,
        node_names=[slot.node_name for slot in cluster.group.slots],
        mounts=mounts,
    )
