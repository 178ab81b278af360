"""The preflight and iostat inside `benchfs run`, for real: fio and iostat on
local nodes, one of them on a throttled loop device (tests/fixtures/slowdisk.py).

The whole `benchfs run` goes into the slow disk's cgroup; the throttle
applies only to I/O on the loop device, which only the slow node's preflight
directory (``<data_dir>/slow``) is on.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fixtures.slowdisk import SlowDisk
from run_helpers import (
    benchfs_run,
    environment,
    manifest,
    needs_fio_and_iostat,
    run_dirs,
    small_args,
)

MIB = 1 << 20
READ_LIMIT = 4 * MIB
pytestmark = [pytest.mark.slow, pytest.mark.timeout(400), needs_fio_and_iostat]


def preflight_args(tmp_path: Path, *extra: str) -> list[str]:
    # small_args switches the preflight off for the other run tests; on again here.
    return small_args(
        tmp_path,
        "--set", "preflight.enabled=true",
        "--set", "preflight.runtime_s=2",
        *extra,
    )  # fmt: skip


def check_iostat_and_stragglers(run_dir: Path, hosts: list[str]) -> dict[str, Any]:
    recorded = manifest(run_dir)
    assert sorted(path.name for path in (run_dir / "iostat").iterdir()) == sorted(
        f"{host}.json" for host in hosts
    )
    stragglers = recorded["stragglers"]
    assert stragglers["status"] == "checked", stragglers
    assert sorted(node["node"] for node in stragglers["nodes"]) == sorted(hosts)
    assert isinstance(stragglers["stragglers"], list)
    return recorded


def test_healthy_local_nodes_are_all_kept_with_evidence(tmp_path: Path) -> None:
    done = benchfs_run(preflight_args(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "preflight: 4 nodes kept" in done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    hosts = [f"local{index}" for index in range(4)]
    recorded = check_iostat_and_stragglers(run_dir, hosts)
    preflight = recorded["preflight"]
    assert preflight["status"] == "run"
    assert preflight["kept"] == hosts and preflight["excluded"] == []
    assert recorded["hosts"]["excluded"] == []
    assert [host["name"] for host in recorded["hosts"]["used"]] == hosts
    for decision in preflight["decisions"]:
        assert decision["decision"] == "kept", decision
        assert decision["evidence"]["values"]["read_bw_MiB_s"] > 0
        assert decision["evidence"]["values"]["write_bw_MiB_s"] > 0
    assert sorted(path.name for path in (run_dir / "preflight").glob("*.json")) == sorted(
        f"{host}.json" for host in hosts
    )
    # The preflight left nothing in the data directory.
    data = tmp_path / "data"
    assert not data.exists() or list(data.iterdir()) == []


def _run_in_group(disk: SlowDisk, args: list[str]) -> subprocess.CompletedProcess[str]:
    argv = disk.in_group([sys.executable, "-m", "benchfs", "run", *args])
    return subprocess.run(argv, capture_output=True, text=True, env=environment(), timeout=300)


@pytest.mark.core_claim
@pytest.mark.root
def test_read_throttled_node_is_excluded_or_flagged(
    tmp_path: Path, slow_disk_factory: Callable[..., SlowDisk]
) -> None:
    disk = slow_disk_factory(tmp_path / "data" / "slow", size_mib=512)
    disk.throttle(read_bps=READ_LIMIT)
    hostfile = tmp_path / "hosts"
    hostfile.write_text("fast0\nfast1\nslow\n")
    data = f"cluster.data_dir={tmp_path / 'data'}"
    common = ["--nodes", str(hostfile), "--set", "launcher.name=local", "--set", data]
    # A larger transfer keeps the healthy nodes' figures far from the throttled one's.
    sizes = ["--transfer-size", "1m", "--block-size", "2m"]

    done = _run_in_group(disk, preflight_args(tmp_path / "excluding", *common, *sizes))
    assert done.returncode == 0, done.stderr
    assert "preflight: slow excluded: " in done.stderr
    assert "preflight: 2 nodes kept, 1 excluded" in done.stderr
    (run_dir,) = run_dirs(tmp_path / "excluding" / "results")
    recorded = check_iostat_and_stragglers(run_dir, ["fast0", "fast1"])
    assert [host["name"] for host in recorded["hosts"]["used"]] == ["fast0", "fast1"]
    (excluded,) = recorded["hosts"]["excluded"]
    assert excluded["name"] == "slow"
    items = excluded["evidence"]["items"]
    assert any(item["metric"] == "read_bw_MiB_s" and item["beyond_limit"] for item in items)
    assert excluded["evidence"]["values"]["read_bw_MiB_s"] < 2 * READ_LIMIT / MIB
    decisions = {d["node"]: d for d in recorded["preflight"]["decisions"]}
    assert decisions["slow"]["decision"] == "excluded"
    assert decisions["fast0"]["decision"] == "kept" and decisions["fast1"]["decision"] == "kept"
    assert recorded["ranks"]["per_host"] == {"fast0": 1, "fast1": 1}

    done = _run_in_group(
        disk, preflight_args(tmp_path / "keeping", *common, *sizes, "--no-exclude-slow")
    )
    assert done.returncode == 0, done.stderr
    assert "preflight: slow kept (preflight.exclude_slow is false)" in done.stderr
    (run_dir,) = run_dirs(tmp_path / "keeping" / "results")
    recorded = check_iostat_and_stragglers(run_dir, ["fast0", "fast1", "slow"])
    assert recorded["hosts"]["excluded"] == []
    assert recorded["preflight"]["exclude_slow"] is False
    slow = next(d for d in recorded["preflight"]["decisions"] if d["node"] == "slow")
    assert slow["decision"] == "kept (flagged)" and slow["policy_excluded"] is True
    assert any(item["metric"] == "read_bw_MiB_s" for item in slow["evidence"]["items"])
    assert json.loads(json.dumps(recorded["preflight"]))["kept"] == ["fast0", "fast1", "slow"]
