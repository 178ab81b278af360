"""The iostat JSON parser on real ``iostat -x -o JSON`` output, and on damaged output."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from analysis.loaders.iostat import IostatFormatError, parse_iostat_json

pytestmark = pytest.mark.skipif(shutil.which("iostat") is None, reason="sysstat is not installed")
HANG_GUARD_S = 60.0  # only a guard against a stuck iostat


def _iostat(count: int) -> str:
    env = {**os.environ, "S_TIME_FORMAT": "ISO", "LC_ALL": "C"}
    argv = ["iostat", "-x", "-t", "-o", "JSON", "-d", "1", str(count)]
    return subprocess.run(argv, capture_output=True, text=True, check=True, env=env).stdout


@pytest.fixture(scope="module")
def three_reports() -> str:
    return _iostat(3)


def test_first_report_since_boot_is_dropped(three_reports: str) -> None:
    report = parse_iostat_json(three_reports, "io.json")
    devices = report.devices
    assert devices, "iostat listed no device"
    assert {sample.interval for sample in report.samples} == {0, 1}
    with_boot = parse_iostat_json(three_reports, "io.json", first_is_since_boot=False)
    assert len(with_boot.samples) == len(report.samples) + len(devices)
    assert report.nodename
    first = report.samples[0]
    assert first.timestamp is not None and "T" in first.timestamp  # ISO timestamps
    assert 0.0 <= first.util_pct <= 100.0


def test_summary_weights_awaits_by_operations(three_reports: str) -> None:
    report = parse_iostat_json(three_reports, "io.json")
    device = report.devices[0]
    summary = report.summary(device)
    assert summary is not None
    rows = [sample for sample in report.samples if sample.device == device]
    assert summary.samples == len(rows) == 2
    assert summary.r_await_max_ms == max(row.r_await_ms for row in rows)
    # A mean weighted by reads per second lies between the extremes.
    assert min(r.r_await_ms for r in rows) <= summary.r_await_ms <= summary.r_await_max_ms
    assert report.summary("no-such-disk") is None
    frame = report.to_frame()
    assert {"r_await_ms", "w_await_ms", "util_pct", "aqu-sz"} <= set(frame.columns)
    assert len(frame) == len(report.samples)


def _iostat_until(reports: int, stop: signal.Signals, tmp_path: Path) -> str:
    """iostat every second into a file, stopped by ``stop`` once it wrote ``reports`` reports
    (iostat flushes each report, so counting timestamps in the file is exact)."""
    out = tmp_path / "iostat.json"
    with out.open("wb") as sink:
        process = subprocess.Popen(["iostat", "-x", "-t", "-o", "JSON", "-d", "1"], stdout=sink)
        try:
            end = time.monotonic() + HANG_GUARD_S
            while out.read_bytes().count(b'"timestamp"') < reports:
                assert process.poll() is None, f"iostat exited with {process.returncode}"
                assert time.monotonic() < end, f"iostat wrote fewer than {reports} reports"
                time.sleep(0.05)
            process.send_signal(stop)
            process.wait(timeout=HANG_GUARD_S)
        finally:
            process.kill()
            process.wait()
    return out.read_text()


def test_interrupted_iostat_closes_its_document_and_parses(tmp_path: Path) -> None:
    out = _iostat_until(3, signal.SIGINT, tmp_path)
    report = parse_iostat_json(out, "interrupted.json")
    assert {sample.interval for sample in report.samples} >= {0, 1}


def test_killed_iostat_output_is_an_error_with_position(tmp_path: Path) -> None:
    out = _iostat_until(2, signal.SIGTERM, tmp_path)  # SIGTERM: iostat dies mid-document
    with pytest.raises(IostatFormatError, match=r"^killed\.json:\d+:\d+: corrupt iostat JSON"):
        parse_iostat_json(out, "killed.json")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "no iostat JSON object"),
        ('{"sysstat": {}}', "lacks sysstat.hosts[0].statistics"),
        (
            '{"sysstat": {"hosts": [{"statistics": [{}, {"cpu": 1}]}]}}',
            "report #1: no 'disk' list",
        ),
        (
            '{"sysstat": {"hosts": [{"statistics": [{}, {"disk": [{"disk_device": "sda"}]}]}]}}',
            "(sda): 'r/s' missing",
        ),
    ],
)
def test_malformed_documents_name_source_and_part(text: str, expected: str) -> None:
    with pytest.raises(IostatFormatError, match=r"^bad\.json") as caught:
        parse_iostat_json(text, "bad.json")
    assert expected in str(caught.value)
