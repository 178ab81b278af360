"""A REAL slow node among three local nodes: diagnose flags it, the preflight policy excludes it.

The slow node's directory is an ext4 loop device throttled by a cgroup (v1 blkio or v2 io);
the other two nodes work on the root disk. Only processes inside the group
are throttled, and only on the loop device.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fixtures.slowdisk import SlowDisk

from benchfs.cluster.hostfile import Host, parse_hostfile
from benchfs.health.preflight import PreflightPattern, preflight, preflight_values
from benchfs.launchers.local import LocalLauncher

pytestmark = [
    pytest.mark.core_claim,
    pytest.mark.slow,
    pytest.mark.root,
    pytest.mark.skipif(
        shutil.which("fio") is None or shutil.which("iostat") is None,
        reason="needs fio and iostat",
    ),
]
MIB = 1024 * 1024
READ_LIMIT = 4 * MIB


@dataclass(frozen=True)
class SlowNodeLauncher(LocalLauncher):
    """The local launcher, with one host's processes started inside the throttled group."""

    disk: SlowDisk | None = None
    slow_host: str = ""

    def command(
        self, host: Host, argv: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> list[str]:
        tokens = super().command(host, argv, env=env)
        if host.name == self.slow_host and self.disk is not None:
            return self.disk.in_group(tokens)
        return tokens


@dataclass
class Cluster:
    hostfile: Path
    base: Path
    disk: SlowDisk


@pytest.fixture
def cluster(tmp_path: Path, slow_disk_factory: Callable[..., SlowDisk]) -> Cluster:
    base = tmp_path / "nodes"
    base.mkdir()
    hostfile = tmp_path / "hosts"
    hostfile.write_text("fast0 slots=2\nfast1:2\nslow\n")  # OpenMPI, MPICH and plain lines
    disk = slow_disk_factory(base / "slow", size_mib=1024)
    return Cluster(hostfile, base, disk)


def _diagnose(disk: SlowDisk, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "benchfs", "diagnose", "--quick", "--json", *args]
    return subprocess.run(disk.in_group(argv), capture_output=True, text=True, timeout=240)


def _node(document: dict[str, Any], name: str) -> dict[str, Any]:
    return next(node for node in document["nodes"] if node["node"] == name)


def test_read_throttled_node_is_flagged_and_excluded(cluster: Cluster, tmp_path: Path) -> None:
    cluster.disk.throttle(read_bps=READ_LIMIT)
    out = tmp_path / "report"
    done = _diagnose(
        cluster.disk,
        "--nodes", str(cluster.hostfile), "--launcher", "local",
        "--dir", str(cluster.base), "--output", str(out),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert document["status"] == "degraded"
    slow = _node(document, "slow")
    assert slow["status"] == "degraded"
    kinds = {(f["kind"], f["test"]) for f in slow["findings"] if f["level"] == "degraded"}
    assert ("asymmetry", "seq_read_direct") in kinds
    assert ("outlier", "seq_read_direct") in kinds, "\n".join(
        f["message"] for f in slow["findings"]
    )
    assert ("limit", "seq_read_direct") in kinds
    measurement = slow["measurement"]
    read_bw = next(t for t in measurement["tests"] if t["name"] == "seq_read_direct")
    assert read_bw["metrics"]["read_bw_MiB_s"] < 2 * READ_LIMIT / MIB
    assert measurement["filesystem"]["device"] == Path(cluster.disk.loop_device).name
    assert read_bw["iostat"]["samples"] >= 1  # iostat watched the loop device
    for name in ("fast0", "fast1"):
        # The healthy nodes share one busy disk, so their figures may differ and draw
        # warnings; what must not happen is a read finding like the throttled node's.
        fast = _node(document, name)
        assert fast["status"] != "error"
        assert not [f for f in fast["findings"] if f["kind"] == "outlier"
                    and f["metric"] == "read_bw_MiB_s" and f["level"] == "degraded"]  # fmt: skip
    policy = document["preflight_policy"]
    assert policy["excluded"] == ["slow"]
    assert policy["kept"] == ["fast0", "fast1"]
    markdown = (out / "diagnose.md").read_text()
    assert "slower than writes" in markdown and "cross-node outlier" in markdown
    assert "A preflight would exclude: **slow**" in markdown
    assert json.loads((out / "diagnose.json").read_text())["status"] == "degraded"

    # The preflight alone (the workload's pattern, several files) reaches the same decision.
    launcher = SlowNodeLauncher(disk=cluster.disk, slow_host="slow")
    pattern = PreflightPattern(transfer_size=MIB, files=4, file_size=8 * MIB, runtime_s=2.0)
    result = preflight(parse_hostfile(cluster.hostfile), launcher, cluster.base, pattern)
    figures = {node.node: (node.error, preflight_values(node)) for node in result.nodes}
    assert result.policy.excluded == ("slow",), figures
    decisions = {d.node: d for d in result.policy.decisions}
    assert decisions["slow"].excluded
    assert any(e.metric == "read_bw_MiB_s" and e.beyond_limit for e in decisions["slow"].evidence)
    assert not decisions["fast0"].excluded and not decisions["fast1"].excluded
    assert json.loads(json.dumps(result.to_dict()))["policy"]["excluded"] == ["slow"]
    assert list((cluster.base / "slow").iterdir()) == [cluster.base / "slow" / "lost+found"]


def test_node_throttled_both_ways_is_slow_overall(cluster: Cluster) -> None:
    cluster.disk.throttle(read_bps=READ_LIMIT, write_bps=8 * MIB)
    done = _diagnose(cluster.disk, "--dir", str(cluster.disk.mount_point))
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    (node,) = document["nodes"]
    limits = {(f["test"], f["metric"]) for f in node["findings"] if f["kind"] == "limit"}
    assert ("seq_write_direct", "write_bw_MiB_s") in limits
    assert ("seq_read_direct", "read_bw_MiB_s") in limits
    asymmetric = [f for f in node["findings"] if f["kind"] == "asymmetry"]
    assert not [f for f in asymmetric if f["level"] == "degraded"]  # slow both ways, not lopsided
