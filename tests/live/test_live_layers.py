"""The layer a run's verdict names, on a real local cluster (four daemons):
one daemon moved mid-phase into a cgroup that starves it, and the verdict
names what starved it with the kernel's own figures.

The move waits for the live view to have seen the daemon healthy
(``Move(..., settled=2)``), so the assertions are about what was said,
never about how fast this machine is.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.cpuquota import cpu_quota
from live_run import benchfs_run, live_args, verdicts
from run_helpers import manifest, needs_fio_and_iostat, run_dirs
from throttle import Move, Throttler

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.timeout(600), needs_fio_and_iostat]
# A fiftieth of one CPU, which the daemon's loop and storage threads share: far below what
# it takes to keep up with the ranks on any machine.
SHARE = 0.02


def test_a_daemon_capped_on_cpu_mid_phase_is_named_cpu_with_its_quota(tmp_path: Path) -> None:
    with cpu_quota(SHARE) as quota:
        schedule = [Move(0, True, settled=2)]
        with Throttler(tmp_path / "results", "local3", quota.group, quota.root,
                       schedule) as mover:  # fmt: skip
            done = benchfs_run(live_args(tmp_path, tmp_path / "data", 10, block="4g"))
    assert done.returncode == 0, done.stderr
    ((capped_ns, _),) = mover.moves
    (run_dir,) = run_dirs(tmp_path / "results")
    cap = (
        f"its cgroup's CPU quota ({SHARE:g} CPU cpu.cfs_quota_us {quota.quota_us} per "
        f"{quota.period_us}) throttled it in "
    )

    # Starved, the daemon slows the whole cluster, which can hide it for an interval:
    # one alert or more, each local3's and the CPU's.
    alerts = manifest(run_dir)["live"]["alerts"]
    assert alerts and alerts[0]["onset_unix_ns"] >= capped_ns, alerts
    assert {(a["node"], a["layer"]) for a in alerts} == {("local3", "cpu")}, alerts
    shown = [line for line in done.stderr.splitlines() if "straggler: " in line]
    assert len(shown) == len(alerts), done.stderr
    assert all("the daemon is starved of CPU; " in line and cap in line for line in shown), shown

    by_node = {v["node"]: v for v in verdicts(run_dir)}
    slow = by_node["local3"]
    assert slow["status"] == "slow" and slow["layer"] == "cpu", slow
    assert "the daemon is starved of CPU; " in slow["verdict"] and cap in slow["verdict"], slow
    assert any(line.startswith(cap) for line in slow["evidence"]), slow
    for healthy in ("local0", "local1", "local2"):
        assert by_node[healthy]["status"] == "ok", by_node[healthy]
