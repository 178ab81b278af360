"""The live view on a real local cluster (four daemons, their data on a loop
device; tests/fixtures/slowdisk.py): one daemon moved into a cgroup that
throttles it on that device while the write phase runs, and moved out again.

Each run's phase ends on time (a stonewall), so the throttle's timing is the
test's own; the assertions are about order (the onset after the throttle
began, the alert raised while the phase still ran), never about how fast
this machine is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fixtures.slowdisk import SlowDisk
from live_run import benchfs_run, live_args, phase_end_s, verdicts
from run_helpers import manifest, needs_fio_and_iostat, run_dirs, summary
from throttle import Move, Throttler

from analysis.jsonlines import read_json_lines

MIB = 1 << 20
LIMIT = 1 * MIB
# The disk of the tests that throttle one daemon mid-phase, and each rank's
# block on it (lowered to what fits): room for the seconds the cluster writes
# unthrottled (a few, at this machine's full speed, 2 GB here), so that every
# phase ends at its stonewall. A sparse image: only what is written takes space.
ROOMY_MIB = 8192
ROOMY_BLOCK = "8g"
pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.timeout(900), needs_fio_and_iostat]


@pytest.mark.core_claim
def test_a_daemon_throttled_mid_phase_is_named_live_with_its_onset(
    tmp_path: Path, slow_disk_factory: Callable[..., SlowDisk]
) -> None:
    disk = slow_disk_factory(tmp_path / "data", size_mib=ROOMY_MIB)
    disk.throttle(read_bps=LIMIT, write_bps=LIMIT)
    root = disk.backend.root
    # Throttled once the live view has judged local3 healthy for two intervals.
    schedule = [Move(0, True, settled=2)]
    with Throttler(tmp_path / "results", "local3", disk.cgroup, root, schedule) as mover:
        done = benchfs_run(live_args(tmp_path, disk.mount_point, 16, block=ROOMY_BLOCK))
    assert done.returncode == 0, done.stderr
    ((throttled_ns, _),) = mover.moves
    (run_dir,) = run_dirs(tmp_path / "results")

    # Named on the terminal while it ran, and in the live log, with the layer and the
    # daemon's cgroup limit.
    name = Path(disk.loop_device).name
    limit = f"the daemon's cgroup caps reads on {name} at 1 MiB/s and writes on {name} at 1 MiB/s"
    (shown,) = [line for line in done.stderr.splitlines() if "straggler: local3: " in line]
    assert "on the others, since 00:" in shown, done.stderr
    assert "delayed in the kernel above the device; " in shown and limit in shown, shown
    assert shown.split("straggler: ")[1] in (run_dir / "logs" / "live.log").read_text()
    live = manifest(run_dir)["live"]
    (alert,) = live["alerts"]
    assert alert["node"] == "local3" and alert["phase"] == "write"
    assert alert["action"] == "warn" and alert["layer"] == "kernel"
    # After the throttle began; raised while the phase still ran; the delay is on record.
    assert alert["onset_unix_ns"] >= throttled_ns, (alert, throttled_ns)
    assert alert["onset_s"] <= alert["raised_s"] < phase_end_s(run_dir), alert
    assert alert["value"] >= 4 * alert["others"] and alert["unit"] == "ms"

    by_node = {v["node"]: v for v in verdicts(run_dir)}
    assert sorted(by_node) == ["local0", "local1", "local2", "local3"]
    slow = by_node["local3"]
    assert slow["status"] == "slow" and slow["pattern"] == "onset", slow
    assert slow["onset_s"] == pytest.approx(alert["onset_s"], abs=1.5)
    assert [span["end_s"] for span in slow["intervals"]] == [None]
    assert slow["metric"] == "storage op mean" and slow["alerts"] == [alert]
    # The time is in the kernel above the device, held there by the cgroup's limit.
    assert slow["layer"] == "kernel", slow
    assert "delayed in the kernel above the device; " + limit in slow["verdict"], slow
    assert f"(blkio.throttle of /{disk.cgroup.name})" in slow["verdict"] or (
        f"(io.max of /{disk.cgroup.name})" in slow["verdict"]
    ), slow
    assert slow["figures"]["p50"] > 10 * slow["figures"]["others_p50"]
    for healthy in ("local0", "local1", "local2"):
        assert by_node[healthy]["status"] == "ok", by_node[healthy]
        assert by_node[healthy]["alerts"] == []
    samples = read_json_lines(run_dir / "live" / "samples.jsonl")
    assert {sample["node"] for sample in samples} == set(by_node)


def test_a_throttle_on_off_and_on_again_is_intermittent_with_two_intervals(
    tmp_path: Path, slow_disk_factory: Callable[..., SlowDisk]
) -> None:
    disk = slow_disk_factory(tmp_path / "data", size_mib=ROOMY_MIB)
    disk.throttle(read_bps=LIMIT, write_bps=LIMIT)
    # On after two healthy intervals; off once it was slow for four (the alert
    # is raised at three); on again once healthy for three (it ends then).
    schedule = [Move(0, True, settled=2), Move(0, False, settled=4), Move(0, True, settled=3)]
    with Throttler(tmp_path / "results", "local3", disk.cgroup, disk.backend.root,
                   schedule) as mover:  # fmt: skip
        done = benchfs_run(live_args(tmp_path, disk.mount_point, 22, block=ROOMY_BLOCK))
    assert done.returncode == 0, done.stderr
    assert [into for _, into in mover.moves] == [True, False, True]
    (write,) = summary(run_dirs(tmp_path / "results")[0])["phases"]
    assert write["stonewalled"], write  # the premise: the phase ran until its stonewall
    (run_dir,) = run_dirs(tmp_path / "results")
    by_node = {v["node"]: v for v in verdicts(run_dir)}
    slow = by_node["local3"]
    assert slow["status"] == "slow" and slow["pattern"] == "intermittent", slow
    first, second = slow["intervals"]
    on, off, on_again = mover.moved_s()
    # Each interval begins within its own throttle (seconds since the phase started).
    assert on <= first["start_s"] < off <= on_again <= second["start_s"], (slow, mover.moves)
    assert first["start_s"] < first["end_s"] <= second["start_s"]
    assert second["end_s"] is None
    alerts = manifest(run_dir)["live"]["alerts"]
    assert [a["node"] for a in alerts] == ["local3", "local3"]
    assert alerts[0]["ended_s"] is not None and alerts[1]["ended_s"] is None
    assert all(by_node[n]["status"] == "ok" for n in ("local0", "local1", "local2"))


def test_a_healthy_run_raises_no_alert_and_every_verdict_is_ok(tmp_path: Path) -> None:
    done = benchfs_run(live_args(tmp_path, tmp_path / "data", 8, phases="write,read"))
    assert done.returncode == 0, done.stderr
    assert "straggler" not in done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    live = manifest(run_dir)["live"]
    # It looked, through the phases: a reading about every second of the 8 s
    # write (the first and last intervals partial, fewer on a loaded machine).
    assert live["alerts"] == [] and live["readings"] >= 4
    found = verdicts(run_dir)
    assert {(v["phase"], v["status"]) for v in found} == {("write", "ok"), ("read", "ok")}
    assert len(found) == 8
