"""A REAL device busy with someone else's I/O during a run: four local daemons,
each on its own ext4 loop device, and a fio outside the run reading local3's
device itself (O_DIRECT, a deep queue) from before the write phase to its end.
The live view reads each node's device from the run's iostat per interval:
local3's device moves far more than its daemon's own bytes, which names
contention from outside the job, with the figures, live and in the verdict."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from fixtures.loopdisk import loop_disk, loop_disk_unavailable
from fixtures.outside_io import outside_fio
from live_run import benchfs_run, live_args, phase_end_s, verdicts
from run_helpers import manifest, needs_fio_and_iostat, run_dirs

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.timeout(300), needs_fio_and_iostat]
NODES = ("local0", "local1", "local2", "local3")


@contextmanager
def outside_writer(device: str, directory: Path) -> Iterator[None]:
    """A fio writing a file of its own in ``directory`` (on ``device``) with
    O_DIRECT at a deep queue until stopped, once the device shows its writes.
    The loop device does direct I/O on its image meanwhile, so the writes reach
    the disk under it rather than the page cache."""
    subprocess.run(["losetup", "--direct-io=on", device], check=True)
    with outside_fio(
        device,
        "written",
        [f"--directory={directory}", "--rw=randwrite", "--bs=1m", "--direct=1",
         "--ioengine=libaio", "--iodepth=16", "--numjobs=2", "--size=96m", "--time_based",
         "--runtime=600"],
    ):  # fmt: skip
        yield


def test_an_outside_fio_on_one_node_s_device_is_named_contention_live(tmp_path: Path) -> None:
    reason = loop_disk_unavailable()
    if reason:
        pytest.skip(f"no loop device: {reason}")
    data = tmp_path / "data"
    with ExitStack() as stack:
        disks = {node: stack.enter_context(loop_disk(data / node, size_mib=512))
                 for node in NODES}  # fmt: skip
        busy = disks["local3"].loop_device
        outside = data / "local3" / "outside"
        outside.mkdir()
        stack.enter_context(outside_writer(busy, outside))
        # Each daemon's data on its own device.
        done = benchfs_run(live_args(tmp_path, data / "{node_name}", 8, block="96m"))
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    shown = [line for line in done.stderr.splitlines() if "straggler: local3: " in line]
    assert shown, done.stderr
    assert all("contention from outside the job" in line for line in shown), shown
    assert all("the device busy with others' I/O: " in line for line in shown), shown
    alerts = manifest(run_dir)["live"]["alerts"]
    assert {(a["node"], a["layer"]) for a in alerts} == {("local3", "contention")}, alerts
    assert all(a["onset_s"] <= a["raised_s"] < phase_end_s(run_dir) for a in alerts), alerts
    by_node = {v["node"]: v for v in verdicts(run_dir)}
    slow = by_node["local3"]
    assert slow["status"] == "slow" and slow["layer"] == "contention", slow
    assert "MB/s on it against the job's own " in slow["verdict"], slow
    assert any(line.startswith("device await ") for line in slow["evidence"]), slow
    for healthy in ("local0", "local1", "local2"):
        assert by_node[healthy]["status"] == "ok", by_node[healthy]
