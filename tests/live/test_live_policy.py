"""live.straggler on a real local cluster: "stop" ends the run with one line
naming the node; "exclude" leaves it out of the sweep's next point, with the
alert as its evidence. The node's daemon is throttled on its data disk from
the moment it registers (tests/fixtures/slowdisk.py)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fixtures.slowdisk import SlowDisk
from run_helpers import environment, manifest, needs_fio_and_iostat, run_dirs
from test_live_alerts import LIMIT, live_args
from throttle import Move, Throttler

from benchfs.errors import LaunchError

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.timeout(900), needs_fio_and_iostat]


def run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchfs", "run", *args],
        capture_output=True, text=True, env=environment(), timeout=600,
    )  # fmt: skip


def test_stop_ends_the_run_with_one_line_naming_the_straggler(
    tmp_path: Path, slow_disk_factory: Callable[..., SlowDisk]
) -> None:
    disk = slow_disk_factory(tmp_path / "data", size_mib=768)
    disk.throttle(read_bps=LIMIT, write_bps=LIMIT)
    args = live_args(tmp_path, disk.mount_point, 60, "--set", "live.straggler=stop")
    with Throttler(tmp_path / "results", "local3", disk.cgroup, disk.backend.root, [Move(0, True)]):
        done = run(args)
    assert done.returncode == LaunchError.exit_code != 0, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert "straggler local3: storage op " in errors[0], errors
    assert errors[0].endswith("(live.straggler = stop)")
    assert "Traceback" not in done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    recorded = manifest(run_dir)
    assert recorded["status"] == "failed" and "local3" in recorded["error"]
    (alert,) = recorded["live"]["alerts"]
    assert alert["node"] == "local3" and alert["action"] == "stop"


def test_exclude_leaves_the_straggler_out_of_the_next_point_with_its_evidence(
    tmp_path: Path, slow_disk_factory: Callable[..., SlowDisk]
) -> None:
    disk = slow_disk_factory(tmp_path / "data", size_mib=768)
    disk.throttle(read_bps=LIMIT, write_bps=LIMIT)
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('[live]\nstraggler = "exclude"\n[workload]\nstonewall_s = [8, 6]\n')
    args = ["--config", str(sweep), *live_args(tmp_path, disk.mount_point, None)]
    with Throttler(tmp_path / "results", "local3", disk.cgroup, disk.backend.root, [Move(0, True)]):
        done = run(args)
    assert done.returncode == 0, done.stderr
    assert "live: local3 left out (a straggler of an earlier point)" in done.stderr
    first, second = run_dirs(tmp_path / "results")
    alerts = manifest(first)["live"]["alerts"]
    assert [a["node"] for a in alerts] == ["local3"] and alerts[0]["action"] == "exclude"
    hosts = manifest(second)["hosts"]
    assert [host["name"] for host in hosts["used"]] == ["local0", "local1", "local2"]
    (left_out,) = hosts["excluded"]
    assert left_out["name"] == "local3" and left_out["reason"].startswith("live: straggler in ")
    assert left_out["evidence"]["source"] == "live"
    assert left_out["evidence"]["results_dir"] == str(first)
    assert left_out["evidence"]["alert"] == alerts[0]
