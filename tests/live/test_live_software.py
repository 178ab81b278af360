"""A REAL slow engine during a run: four local daemons, local3's holding every
request in its queue 20 ms before its dispatch (the fault point
``BENCHFS_FAULT_QUEUE_DELAY_US``, docs/DIAGNOSE.md). Nothing below the queue is
slower than on the others, so the live view names the node and the verdict
the daemon's queue: the software, not storage, the device or the network."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from live_run import benchfs_run, live_args, phase_end_s, verdicts
from run_helpers import manifest, run_dirs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
DELAY_US = 20_000


def test_a_daemon_slow_in_its_queue_is_named_the_software_live(tmp_path: Path) -> None:
    fault = {"BENCHFS_FAULT_QUEUE_DELAY_US": f"local3={DELAY_US}"}
    done = benchfs_run(live_args(tmp_path, tmp_path / "data", 8), env=fault)
    assert done.returncode == 0, done.stderr
    (run_dir,) = run_dirs(tmp_path / "results")
    daemon_log = (run_dir / "logs" / "daemons" / "local3.log").read_text()
    assert f"fault point on: every request held {DELAY_US} us in the queue" in daemon_log

    # Named on the terminal while it ran: the queue, not a layer below it.
    shown = [line for line in done.stderr.splitlines() if "straggler: " in line]
    assert shown and all("straggler: local3: " in line for line in shown), done.stderr
    assert all("the software explains it (the daemon's queue)" in line for line in shown), shown
    alerts = manifest(run_dir)["live"]["alerts"]
    assert {(a["node"], a["layer"]) for a in alerts} == {("local3", "queue")}, alerts
    assert all(a["onset_s"] <= a["raised_s"] < phase_end_s(run_dir) for a in alerts), alerts

    by_node = {v["node"]: v for v in verdicts(run_dir)}
    slow = by_node["local3"]
    assert slow["status"] == "slow" and slow["layer"] == "queue", slow
    assert slow["metric"] == "queue mean" and slow["alerts"] == alerts, slow
    assert slow["verdict"].endswith(
        "with the storage op and the device normal: the software explains it (the daemon's queue)"
    ), slow
    # The queue holds the extra time: at least most of the delay per request, the
    # others' queue far below it.
    (queue,) = [line for line in slow["evidence"] if line.startswith("daemon queue ")]
    found = re.fullmatch(r"daemon queue ([\d.,]+) ms vs ([\d.,]+) ms on the others", queue)
    assert found, queue
    mine, others = (float(group.replace(",", "")) for group in found.groups())
    assert mine >= 0.5 * DELAY_US / 1000 and others < mine / 4, queue
    for healthy in ("local0", "local1", "local2"):
        assert by_node[healthy]["status"] == "ok", by_node[healthy]
