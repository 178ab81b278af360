"""A real daemon's ``kernel`` object (docs/RPC.md, "Kernel"): its data
directory's device, and the limits of the cgroups it is moved into while it
runs (a throttle on that device, a CPU quota), read afresh on every stats
request."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fixtures.cpuquota import cpu_quota
from fixtures.slowdisk import SlowDisk

import benchfs_native

DEADLINE_S = 60.0
MIB = 1 << 20
pytestmark = pytest.mark.root


@contextmanager
def daemon(tmp_path: Path, data: Path) -> Iterator[tuple[int, Callable[[], dict[str, Any]]]]:
    """A daemon with its data in ``data``: its pid, and its kernel object on demand."""
    registry = tmp_path / "registry"
    config = tmp_path / "daemon.toml"
    config.write_text(
        f'node_name = "knode"\nnode_id = 0\ndata_dir = {json.dumps(str(data))}\n'
        f'registry_dir = {json.dumps(str(registry))}\nbuffer_pool_size = "16m"\n'
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchfs", "daemon", "--config", str(config)],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        until = time.monotonic() + DEADLINE_S
        while not (registry / "knode.json").exists():
            if proc.poll() is not None or time.monotonic() > until:
                pytest.fail(f"daemon did not register: {proc.communicate()[1]}")
            time.sleep(0.02)
        with benchfs_native.Client(str(registry), 1, connect_deadline_s=30.0) as client:
            yield proc.pid, lambda: dict(client.stats(0)["kernel"])
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=DEADLINE_S)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_the_kernel_object_carries_the_limits_of_the_daemon_s_cgroups(
    tmp_path: Path, slow_disk_factory: Callable[..., SlowDisk]
) -> None:
    disk = slow_disk_factory(tmp_path / "disk", size_mib=64)
    disk.throttle(read_bps=20 * MIB, write_bps=0)
    name = Path(disk.loop_device).name
    with daemon(tmp_path, disk.mount_point / "data") as (pid, kernel):
        free = kernel()
        assert free["device"]["name"] == name and free["device"]["disk"] == disk.major_minor
        assert free["cgroup"]["io_limits"] is None, free["cgroup"]
        assert free["process"]["threads"] >= 2 and free["process"]["run_ns"] > 0
        assert free["cpu"]["total_ticks"] > 0 and free["time_ns"] > 0

        (disk.cgroup / "cgroup.procs").write_text(str(pid))
        limits = kernel()["cgroup"]["io_limits"]
        source = "blkio.throttle" if disk.backend.name == "v1" else "io.max"
        assert limits == {
            "source": source, "cgroup": f"/{disk.cgroup.name}", "read_bps": 20 * MIB,
            "write_bps": None, "read_iops": None, "write_iops": None,
        }  # fmt: skip

        with cpu_quota(0.5) as quota:
            (quota.group / "cgroup.procs").write_text(str(pid))
            cpu = kernel()["cgroup"]["cpu"]
            assert cpu["cgroup"] == f"/{quota.group.name}", cpu
            assert (cpu["quota_us"], cpu["period_us"]) == (quota.quota_us, quota.period_us)
            assert isinstance(cpu["nr_periods"], int) and isinstance(cpu["nr_throttled"], int)
            (quota.root / "cgroup.procs").write_text(str(pid))
        assert kernel()["cgroup"]["cpu"]["quota_us"] is None
