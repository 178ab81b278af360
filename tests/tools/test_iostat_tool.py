"""IostatSampler and IostatWatch on real iostat."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from benchfs.cluster.hostfile import Host
from benchfs.errors import ToolError
from benchfs.launchers import get_launcher
from benchfs.tools.fsinfo import inspect_directory
from benchfs.tools.iostat import IostatSampler, IostatWatch, iostat_command, parse_lenient

pytestmark = pytest.mark.skipif(shutil.which("iostat") is None, reason="sysstat is not installed")


def _disk() -> str:
    disks = inspect_directory(Path("/")).disks
    if not disks:
        pytest.skip("the root file system has no block device here")
    return disks[0]


def test_command_line_is_exact() -> None:
    assert iostat_command(["vda", "loop0"], 2) == [
        "iostat", "-x", "-t", "-o", "JSON", "-d", "vda", "loop0", "2",
    ]  # fmt: skip
    with pytest.raises(ToolError, match="no devices"):
        iostat_command([])


def test_sampler_returns_interval_samples_and_keeps_raw_output(tmp_path: Path) -> None:
    disk = _disk()
    raw = tmp_path / "iostat.json"
    with IostatSampler([disk], raw_output=raw) as sampler:
        time.sleep(2.4)
    report = sampler.report
    assert report is not None
    assert report.devices == [disk]
    assert len(report.samples) >= 1  # the since-boot report is not among them
    assert report.summary(disk) is not None
    assert raw.read_text().rstrip().endswith("}}")  # SIGINT: iostat closed its document


def test_stopping_at_once_gives_an_empty_report() -> None:
    sampler = IostatSampler([_disk()]).start()
    report = sampler.stop()
    assert all(sample.interval >= 0 for sample in report.samples)
    with pytest.raises(ToolError, match="not started"):
        sampler.stop()


def test_absent_iostat_is_named() -> None:
    with pytest.raises(ToolError, match="iostat not found"):
        IostatSampler(["vda"], iostat_binary="iostat-not-installed").start()


def test_unknown_device_fails_with_iostat_message() -> None:
    sampler = IostatSampler(["no-such-disk0"]).start()
    time.sleep(1.2)
    report = sampler.stop()
    # iostat ignores devices it does not know: no samples, no crash.
    assert report.samples == ()


def test_watch_through_the_local_launcher() -> None:
    disk = _disk()
    watch = IostatWatch(Host("node0"), get_launcher("local"), [disk])
    assert watch.argv[:2] == ["env", "S_TIME_FORMAT=ISO"]
    watch.start()
    time.sleep(2.4)
    report = watch.stop()
    assert report.devices == [disk]
    assert report.samples[0].timestamp and "T" in report.samples[0].timestamp


def test_lenient_parse_keeps_complete_reports_of_a_cut_document(tmp_path: Path) -> None:
    disk = _disk()
    raw = tmp_path / "whole.json"
    with IostatSampler([disk], raw_output=raw):
        time.sleep(3.3)
    text = raw.read_text()
    whole = parse_lenient(text, "whole")
    cut_at = text.rindex('{"disk_device"') + 10  # inside the last report's disk line
    cut = parse_lenient(text[:cut_at], "cut")
    assert len(cut.samples) == len(whole.samples) - 1
    assert [s.r_await_ms for s in cut.samples] == [s.r_await_ms for s in whole.samples[:-1]]
