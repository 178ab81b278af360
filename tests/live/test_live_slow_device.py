"""A REAL slow device during a run: four local daemons, each on its own ext4
loop device, local3's doing direct I/O on its image, and local3's daemon moved
mid-phase into a cgroup that throttles its writes on the disk under the image
(not on the loop device). Its writes then wait below the loop device, which
iostat shows as the loop device's own await: the live view names the device,
not the kernel above it (no limit on the daemon's data device)."""

from __future__ import annotations

import os
import subprocess
import uuid
from contextlib import ExitStack
from pathlib import Path

import pytest
from fixtures.cgroups import chosen_backend
from fixtures.loopdisk import loop_disk, loop_disk_unavailable
from live_run import benchfs_run, live_args, phase_end_s, verdicts
from run_helpers import manifest, needs_fio_and_iostat, run_dirs
from throttle import Move, Throttler

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.timeout(300), needs_fio_and_iostat]
NODES = ("local0", "local1", "local2", "local3")
IMAGES = Path("/tmp")
LIMIT = 2 << 20
# Each disk and each rank's block on it: room for the seconds the cluster
# writes at full speed before the throttle (it moves once the live view saw
# local3 healthy for two intervals: 2 GB and more here), so that the phase
# ends at its stonewall, throttled. Sparse images: only what is written
# takes space.
DISK_MIB = 3072
BLOCK = "2g"


def _disk_under(directory: Path) -> str:
    """``major:minor`` of the whole disk holding ``directory`` (cgroups limit disks)."""
    dev = os.stat(directory).st_dev
    block = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").resolve()
    if (block / "partition").exists():
        block = block.parent
    return (block / "dev").read_text().strip()


def test_a_device_slow_below_itself_is_named_the_device_live(tmp_path: Path) -> None:
    backend = chosen_backend()
    reason = loop_disk_unavailable() or (
        "no cgroup controller" if backend is None else backend.unavailable()
    )
    if reason:
        pytest.skip(f"no slow device: {reason}")
    assert backend is not None
    data = tmp_path / "data"
    with ExitStack() as stack:
        disks = {node: stack.enter_context(loop_disk(data / node, size_mib=DISK_MIB,
                                                     image_dir=IMAGES))
                 for node in NODES}  # fmt: skip
        slow = disks["local3"].loop_device
        subprocess.run(["losetup", "--direct-io=on", slow], check=True)
        group = stack.enter_context(backend.group(f"benchfs-slowdev-{uuid.uuid4().hex[:8]}"))
        backend.throttle(group, _disk_under(IMAGES), 0, LIMIT)
        schedule = [Move(0, True, settled=2)]
        with Throttler(tmp_path / "results", "local3", group, backend.root, schedule) as mover:
            done = benchfs_run(live_args(tmp_path, data / "{node_name}", 10, block=BLOCK))
    assert done.returncode == 0, done.stderr
    ((throttled_ns, _),) = mover.moves
    (run_dir,) = run_dirs(tmp_path / "results")
    shown = [line for line in done.stderr.splitlines() if "straggler: local3: " in line]
    assert shown, done.stderr
    assert all(": the device itself is slow" in line for line in shown), shown
    alerts = manifest(run_dir)["live"]["alerts"]
    assert {(a["node"], a["layer"]) for a in alerts} == {("local3", "device")}, alerts
    assert all(a["onset_unix_ns"] >= throttled_ns for a in alerts), (alerts, throttled_ns)
    assert all(a["onset_s"] <= a["raised_s"] < phase_end_s(run_dir) for a in alerts), alerts
    by_node = {v["node"]: v for v in verdicts(run_dir)}
    verdict = by_node["local3"]
    assert verdict["status"] == "slow" and verdict["layer"] == "device", verdict
    assert verdict["verdict"].endswith(": the device itself is slow"), verdict
    assert any(line.startswith("device await ") for line in verdict["evidence"]), verdict
    for healthy in ("local0", "local1", "local2"):
        assert by_node[healthy]["status"] == "ok", by_node[healthy]
