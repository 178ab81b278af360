"""IostatSampler and IostatWatch on real iostat."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from fixtures.loopdisk import LoopDisk

from benchfs.cluster.hostfile import Host
from benchfs.errors import ToolError
from benchfs.launchers import get_launcher
from benchfs.tools.fsinfo import inspect_directory
from benchfs.tools.iostat import IostatSampler, IostatWatch, iostat_command, parse_lenient

pytestmark = pytest.mark.skipif(shutil.which("iostat") is None, reason="sysstat is not installed")
# Only a guard against a stuck iostat: the tests wait for reports, never for a time.
HANG_GUARD_S = 60.0


def wait_for(sampler: IostatSampler | IostatWatch, reports: int) -> None:
    """Wait until iostat wrote ``reports`` reports (the since-boot one counts)."""
    assert sampler.wait_for_reports(reports, HANG_GUARD_S), (
        f"iostat wrote {sampler.reports_written()} of {reports} reports"
    )


@pytest.fixture
def disk(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """The root file system's disk, or where it has none, a loop device made for the test."""
    disks = inspect_directory(Path("/")).disks
    if disks:
        return disks[0]
    make: Callable[..., LoopDisk] = request.getfixturevalue("loop_disk_factory")
    return Path(make(tmp_path / "loop").loop_device).name


def test_command_line_is_exact() -> None:
    assert iostat_command(["vda", "loop0"], 2) == [
        "iostat", "-x", "-t", "-o", "JSON", "-d", "vda", "loop0", "2",
    ]  # fmt: skip
    with pytest.raises(ToolError, match="no devices"):
        iostat_command([])


def test_sampler_returns_interval_samples_and_keeps_raw_output(disk: str, tmp_path: Path) -> None:
    raw = tmp_path / "iostat.json"
    with IostatSampler([disk], raw_output=raw) as sampler:
        wait_for(sampler, 3)
    report = sampler.report
    assert report is not None
    assert report.devices == [disk]
    # At least the two interval reports waited for; the since-boot report is not among them.
    assert len(report.samples) >= 2
    assert {sample.interval for sample in report.samples} >= {0, 1}
    assert report.summary(disk) is not None
    assert raw.read_text().rstrip().endswith("}}")  # SIGINT: iostat closed its document


def test_stopping_at_once_gives_a_report_without_the_since_boot_figures(
    disk: str, tmp_path: Path
) -> None:
    raw = tmp_path / "iostat.json"
    sampler = IostatSampler([disk], raw_output=raw).start()
    report = sampler.stop()
    # Usually no report or only the since-boot one (dropped) was written; whatever interval
    # reports a slow stop let through are there, one sample each.
    written = raw.read_text().count('"timestamp"')
    assert len(report.samples) == max(written - 1, 0)
    with pytest.raises(ToolError, match="not started"):
        sampler.stop()


def test_absent_iostat_is_named() -> None:
    with pytest.raises(ToolError, match="iostat not found"):
        IostatSampler(["vda"], iostat_binary="iostat-not-installed").start()


def test_unknown_device_fails_with_iostat_message() -> None:
    sampler = IostatSampler(["no-such-disk0"]).start()
    wait_for(sampler, 2)  # a report since boot and an interval report, both without disks
    report = sampler.stop()
    # iostat ignores devices it does not know: no samples, no crash.
    assert report.samples == ()


def test_watch_through_the_local_launcher(disk: str) -> None:
    watch = IostatWatch(Host("node0"), get_launcher("local"), [disk])
    assert watch.argv[:2] == ["env", "S_TIME_FORMAT=ISO"]
    watch.start()
    wait_for(watch, 2)
    report = watch.stop()
    assert report.devices == [disk]
    assert report.samples[0].timestamp and "T" in report.samples[0].timestamp


def test_lenient_parse_keeps_complete_reports_of_a_cut_document(disk: str, tmp_path: Path) -> None:
    raw = tmp_path / "whole.json"
    with IostatSampler([disk], raw_output=raw) as sampler:
        wait_for(sampler, 4)
    text = raw.read_text()
    whole = parse_lenient(text, "whole")
    cut_at = text.rindex('{"disk_device"') + 10  # inside the last report's disk line
    cut = parse_lenient(text[:cut_at], "cut")
    assert len(whole.samples) >= 3
    assert len(cut.samples) == len(whole.samples) - 1
    assert [s.r_await_ms for s in cut.samples] == [s.r_await_ms for s in whole.samples[:-1]]
