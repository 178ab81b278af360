"""The history of three real runs on local nodes (tests/fixtures/slowdisk.py):
the data directory on a loop device, and a node's daemon moved into a cgroup
that throttles it on that device once it has registered, so the preflight
before the run passes and the node is slow while the workload runs.

Run 1: local3 and local1 throttled; run 2: local3 only; run 3: none. Then
local3 is confirmed (flagged in 2 of its last 2 runs) and run 3's preflight
leaves it out with that history as its evidence; local1 recovered and is
said to have; local0 and local2 are healthy.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from fixtures.slowdisk import SlowDisk
from run_helpers import environment, manifest, needs_fio_and_iostat, run_dirs, scratch_dirs
from table_checks import assert_fits

from benchfs.history.views import NODE_HEADERS

MIB = 1 << 20
# Each throttled daemon on its own group: 1 MiB/s each way on the loop device.
LIMIT = 1 * MIB
pytestmark = [
    pytest.mark.slow,
    pytest.mark.root,
    pytest.mark.timeout(1200),
    needs_fio_and_iostat,
    pytest.mark.usefixtures("whole_lines"),
]


def run_args(root: Path, data: Path) -> list[str]:
    """Four local nodes, 4 MiB per rank in 64 KiB transfers, a short preflight."""
    return [
        "--results-dir", str(root / "results"),
        "--set", f"cluster.data_dir={data}",
        "--set", "cluster.chunk_size=256k",
        "--set", "cluster.buffer_pool_size=16m",
        "--set", "cluster.deadlines.shutdown_s=5",
        "--set", "preflight.runtime_s=1",
        "--set", "workload.stonewall_s=0",
        "--transfer-size", "64k",
        "--block-size", "4m",
    ]  # fmt: skip


class Mover(threading.Thread):
    """Moves each named node's daemon into its cgroup as soon as it registers."""

    def __init__(self, results: Path, groups: dict[str, Path]) -> None:
        super().__init__(daemon=True)
        self.results, self.groups = results, groups
        self.moved: dict[str, int] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.02) and len(self.moved) < len(self.groups):
            for scratch in scratch_dirs(self.results):
                for path in scratch.glob("g*/registry/*.json"):
                    try:
                        record = json.loads(path.read_text())
                    except (OSError, ValueError):
                        continue  # being written
                    node = str(record.get("node_name"))
                    if node in self.groups and node not in self.moved:
                        (self.groups[node] / "cgroup.procs").write_text(str(record["pid"]))
                        self.moved[node] = int(record["pid"])


@contextmanager
def throttled(results: Path, groups: dict[str, Path]) -> Iterator[Mover]:
    mover = Mover(results, groups)
    mover.start()
    try:
        yield mover
    finally:
        mover.stop.set()
        mover.join()


def benchfs(
    *args: str, timeout: float = 300, columns: int | None = None
) -> subprocess.CompletedProcess[str]:
    """``benchfs ARGS``; ``columns``: the terminal width its tables get
    (else the whole_lines width, each step on one line)."""
    env = environment() if columns is None else {**environment(), "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-m", "benchfs", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def nodes_json(results: Path, *extra: str) -> dict[str, Any]:
    done = benchfs("nodes", "--results-dir", str(results), "--json", *extra)
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


@pytest.mark.core_claim
def test_three_runs_make_a_node_confirmed_another_recovered_and_the_next_preflight_acts(
    tmp_path: Path, slow_disk_factory: Callable[..., SlowDisk]
) -> None:
    disk = slow_disk_factory(tmp_path / "data", size_mib=768)
    disk.throttle(read_bps=LIMIT, write_bps=LIMIT)
    results = tmp_path / "results"
    args = run_args(tmp_path, disk.mount_point)
    with ExitStack() as stack:
        second = stack.enter_context(disk.backend.group(f"benchfs-history-{tmp_path.name}"))
        disk.backend.throttle(second, disk.major_minor, LIMIT, LIMIT)
        for groups in ({"local3": disk.cgroup, "local1": second}, {"local3": disk.cgroup}):
            with throttled(results, groups) as mover:
                done = benchfs("run", *args)
            assert done.returncode == 0, done.stderr
            assert sorted(mover.moved) == sorted(groups), done.stderr
            assert "history: completed run recorded in" in done.stderr

    first, second_run = run_dirs(results)
    history = nodes_json(results)
    by_node = {node["node"]: node for node in history["nodes"]}
    assert by_node["local3"]["status"] == "confirmed", by_node["local3"]
    assert by_node["local3"]["runs_flagged"] == 2 and by_node["local3"]["runs_seen"] == 2
    assert by_node["local1"]["status"] == "recovered", by_node["local1"]
    assert by_node["local1"]["runs_flagged"] == 1
    for healthy in ("local0", "local2"):
        assert by_node[healthy]["status"] == "healthy", by_node[healthy]
        assert by_node[healthy]["runs_flagged"] == 0
    worst = by_node["local3"]["worst"]
    # The engine's storage ops on the throttled daemon against the others'.
    assert worst["metric"].endswith("storage op mean") and worst["unit"] == "ms"
    assert worst["value"] > 10 * worst["typical"], worst
    assert worst["results_dir"] in (str(first), str(second_run))

    # Run 3: nothing throttled; its preflight leaves local3 out on its history.
    done = benchfs("run", *args)
    assert done.returncode == 0, done.stderr
    assert "history: local3 excluded: confirmed: flagged in 2 of its last 2 runs" in done.stderr
    assert "history: local1 kept: recovered: clean in its last 1 run" in done.stderr
    third = run_dirs(results)[-1]
    recorded = manifest(third)
    assert [host["name"] for host in recorded["hosts"]["used"]] == ["local0", "local1", "local2"]
    (left_out,) = recorded["hosts"]["excluded"]
    assert left_out["name"] == "local3"
    assert left_out["reason"].startswith("history: confirmed: flagged in 2 of its last 2 runs")
    evidence = left_out["evidence"]
    assert evidence["source"] == "history" and evidence["recent_flags"] == [True, True]
    assert [run["results_dir"] for run in evidence["runs"]] == [str(second_run), str(first)]
    assert all(run["flagged"] for run in evidence["runs"])
    consulted = recorded["preflight"]["history"]
    assert consulted["status"] == "consulted"
    decisions = {node["node"]: node["decision"] for node in consulted["nodes"]}
    assert decisions == {"local3": "excluded", "local1": "kept"}
    report = (third / "report.md").read_text()
    assert "history: local3 excluded: confirmed" in report
    assert "## Node history" in report

    # Seen in two runs, left out of the third; local1 clean twice now.
    history = nodes_json(results)
    by_node = {node["node"]: node for node in history["nodes"]}
    assert by_node["local3"]["status"] == "confirmed"
    assert by_node["local3"]["runs_left_out"] == 1
    assert by_node["local1"]["status"] == "recovered"
    assert by_node["local1"]["runs_seen"] == 3

    table = benchfs("nodes", "--results-dir", str(results), columns=80)
    assert table.returncode == 0, table.stderr
    # One line per node in 80 columns, worst first; then one reason line per node not healthy.
    rows = [line.split() for line in table.stdout.splitlines()
            if line.split()[:1] in (["local0"], ["local1"], ["local2"], ["local3"])]  # fmt: skip
    assert_fits(table.stdout, 80, headers=NODE_HEADERS)
    assert [row[:2] for row in rows] == [["local3", "confirmed"], ["local1", "recovered"],
                                         ["local0", "healthy"], ["local2", "healthy"]]  # fmt: skip
    assert rows[0][2:4] == ["2", "2"] and rows[0][-1] == "ms"
    assert "local3: confirmed: flagged in 2 of its last 2 runs" in table.stdout
    one = benchfs("nodes", "--results-dir", str(results), "--node", "local3", "--html",
                  str(tmp_path / "local3.html"))  # fmt: skip
    assert one.returncode == 0, one.stderr
    assert "out (history)" in one.stdout
    page = (tmp_path / "local3.html").read_text()
    assert "data:image/png;base64," in page and "confirmed" in page

    hint = benchfs("nodes", "--results-dir", str(results), "--drain-hint")
    assert hint.returncode == 0, hint.stderr
    (line,) = hint.stdout.splitlines()
    assert line.startswith('scontrol update nodename=local3 state=drain reason="benchfs: confirmed')
    check = benchfs("nodes", "--results-dir", str(results), "--exit-code", "--nodes", "local[0-3]")
    assert check.returncode == 1 and "confirmed slow: local3" in check.stderr
    check = benchfs("nodes", "--results-dir", str(results), "--exit-code", "--nodes", "local[0-2]")
    assert check.returncode == 0, check.stderr

    # The same rows again from the directories: importing changes nothing.
    before = nodes_json(results)
    imported = benchfs("history", "import", str(results), "--results-dir", str(results))
    assert imported.returncode == 0, imported.stderr
    assert "3 runs recorded" in imported.stdout
    assert nodes_json(results) == before
