"""Several local nodes: healthy ones are not flagged for exclusion, broken ones are errors while
the others still report, and every node answers within its deadline."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchfs.cluster.deadline import wait_until
from benchfs.cluster.hostfile import Host
from benchfs.health.diagnose import diagnose_cluster
from benchfs.health.measure import measure_node
from benchfs.health.preflight import PreflightPattern, preflight
from benchfs.health.thresholds import Thresholds
from benchfs.launchers.local import LocalLauncher

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("fio") is None or shutil.which("iostat") is None,
        reason="needs fio and iostat",
    ),
]
MIB = 1024 * 1024
HEALTHY = [Host("fast0"), Host("fast1"), Host("fast2")]
# Healthy local nodes share one disk and a busy machine: their figures swing by whatever else
# runs. These limits and factors are so wide that no load can make a healthy node look
# degraded or an outlier, so the verdicts below depend only on what the test arranged (a full
# disk). Finding slow nodes with the real defaults is tested on a throttled disk (test_slow_node).
LOAD_PROOF = Thresholds(
    seq_write_min_MiB_s=0.0,
    seq_read_min_MiB_s=0.0,
    rand_iops_min=0.0,
    rand_read_p99_max_ms=1e9,
    rand_write_p99_max_ms=1e9,
    fsync_iops_min=0.0,
    fsync_p99_max_ms=1e9,
    create_min_ops_s=0.0,
    stat_min_ops_s=0.0,
    delete_min_ops_s=0.0,
    r_await_max_ms=1e9,
    w_await_max_ms=1e9,
    asymmetry_ratio_warn=1e9,
    asymmetry_ratio=1e9,
    tail_ratio_warn=1e9,
    tail_ratio_degraded=1e9,
    bw_cv_warn=1e9,
    outlier_degraded_factor=1e9,
)


@pytest.fixture
def full_disk_node(tmp_path: Path) -> Iterator[Path]:
    """``<base>/full``: a 4 MiB tmpfs, far too small for the tests (root only)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    base = tmp_path / "nodes"
    full = base / "full"
    full.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(full)], check=True)
    try:
        yield base
    finally:
        subprocess.run(["umount", "-l", str(full)], check=False)


def test_healthy_nodes_report_and_a_full_disk_is_an_error(full_disk_node: Path) -> None:
    base = full_disk_node
    hosts = [*HEALTHY, Host("full")]
    report = diagnose_cluster(hosts, LocalLauncher(), base, quick=True, thresholds=LOAD_PROOF)
    by_node = {node.node: node for node in report.nodes}
    assert "not enough free space" in (by_node["full"].error or "")
    assert report.exit_code == 2 and report.status == "error"
    for host in HEALTHY:
        node = by_node[host.name]
        assert node.error is None and len(node.tests) == 7
        assert not [test.name for test in node.tests if test.error]
        assert node.directory == str(base / host.name)
    statuses = {a.node: a.status for a in report.assessments}
    assert statuses == {"fast0": "healthy", "fast1": "healthy", "fast2": "healthy", "full": "error"}
    assert report.policy is not None
    assert report.policy.excluded == ("full",)  # never a healthy node
    assert report.policy.kept == ("fast0", "fast1", "fast2")
    # Cleaned up: the healthy nodes' directories, made for the run, are gone; "full" was there.
    assert [path.name for path in base.iterdir()] == ["full"]


def test_repeated_preflights_of_healthy_nodes_exclude_nothing(tmp_path: Path) -> None:
    pattern = PreflightPattern(transfer_size=MIB, files=4, file_size=8 * MIB, runtime_s=1.5)
    for attempt in range(3):
        result = preflight(HEALTHY, LocalLauncher(), tmp_path, pattern)
        assert result.policy.excluded == (), (attempt, result.policy.decisions)
        assert result.policy.kept == ("fast0", "fast1", "fast2")
        for node in result.nodes:
            assert node.error is None
            assert node.metric("preflight_read", "read_bw_MiB_s")
            assert node.metric("preflight_write", "write_bw_MiB_s")


def _processes_naming(text: str) -> list[str]:
    """Command lines of the running processes that mention ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in argv and entry.name != str(os.getpid()):
            found.append(f"{entry.name}: {argv}")
    return found


def test_a_node_past_its_deadline_is_killed_and_reported(tmp_path: Path) -> None:
    report = diagnose_cluster(
        HEALTHY[:2], LocalLauncher(), tmp_path, quick=True, thresholds=Thresholds(), deadline_s=1
    )
    for node in report.nodes:
        assert node.error == f"diagnose worker on {node.node} did not finish within 1 s"
    assert report.exit_code == 2
    # Killed, not abandoned: no worker (nor its fio) is left running in the nodes' directories.
    wait_until(
        lambda: "; ".join(_processes_naming(str(tmp_path))) or None,
        deadline_s=30,
        what="the killed workers to vanish",
    )


def test_a_node_directory_that_is_a_file_is_an_error_for_that_node_only(tmp_path: Path) -> None:
    (tmp_path / "fast1").write_text("not a directory")
    pattern = PreflightPattern(transfer_size=MIB, files=2, file_size=4 * MIB, runtime_s=1.0)
    result = preflight(HEALTHY, LocalLauncher(), tmp_path, pattern)
    errors = {node.node: node.error for node in result.nodes}
    assert errors["fast0"] is None and errors["fast2"] is None
    assert errors["fast1"] == f"directory {tmp_path / 'fast1'} does not exist or is not a directory"
    assert result.policy.excluded == ("fast1",)


def test_missing_directory_and_absent_fio_stop_one_node(tmp_path: Path) -> None:
    missing = measure_node(tmp_path / "missing", quick=True, node="n1")
    assert missing.error == f"directory {tmp_path / 'missing'} does not exist or is not a directory"
    assert missing.tests == ()
    no_fio = measure_node(tmp_path, quick=True, node="n2", env={"PATH": str(tmp_path)})
    assert no_fio.error == "fio not found on PATH (install the fio package)"
